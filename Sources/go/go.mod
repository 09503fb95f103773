module applepay

go 1.19
