{ x, y, x }: x
