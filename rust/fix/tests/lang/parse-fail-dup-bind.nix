args@{ args, ... }: args
