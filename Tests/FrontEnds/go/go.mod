module applepay-frontends

go 1.19

require github.com/applepay-decryption/ApplePayDecryption/Sources/go v0.0.0

replace github.com/applepay-decryption/ApplePayDecryption/Sources/go => ../../../Sources/go
