// Decrypts one bundled test token through libapplepay.so (the README and the C ABI article quote it).
package main

import (
	"fmt"
	"os"

	"github.com/applepay-decryption/ApplePayDecryption/Sources/go/applepay"
)

func read(path string) []byte {
	b, err := os.ReadFile("../../" + path)
	if err != nil {
		panic(err)
	}
	return b
}

func main() {
	merchant := applepay.CertificateMerchant(read("Vectors/merchants/ec.cert.pem"), read("Vectors/merchants/ec.key.pem"))
	decryptor, err := applepay.NewDecryptor([]applepay.Merchant{merchant},
		applepay.Options{InsecureTestRootPEM: read("Vectors/trust/test-root.pem")}) // tests only
	if err != nil {
		panic(err)
	}
	defer decryptor.Free()
	code, result := decryptor.Decrypt(read("Vectors/tokens/ec-3dsecure.json"), 1772366460) // 2026-03-01T12:01:00Z
	fmt.Println(code, *result.TransactionID())
	fmt.Println(string(result.PaymentJSON()))
	result.Free()                                           // wipes the library's copy of the payment JSON
	code, _ = decryptor.Decrypt(nil, applepay.ReferenceNow) // a wrong call is an error code
	fmt.Println(code)
}
