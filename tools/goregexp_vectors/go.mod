module gore

go 1.26
