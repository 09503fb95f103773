module github.com/applepay-decryption/ApplePayDecryption/Sources/go

go 1.19
