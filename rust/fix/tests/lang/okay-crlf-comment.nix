# comment
1
