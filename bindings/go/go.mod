module tessera

go 1.19
