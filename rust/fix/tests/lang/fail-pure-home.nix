~/.bashrc
