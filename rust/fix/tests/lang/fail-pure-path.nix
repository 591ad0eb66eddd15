builtins.readFile /etc/hostname
