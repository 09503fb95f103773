# Decrypts one bundled test token through libapplepay.so (the README and the C ABI article quote it).
import applepay

read = lambda path: open(path, "rb").read()
merchant = applepay.Merchant.certificate(read("Vectors/merchants/ec.cert.pem"), read("Vectors/merchants/ec.key.pem"))
with applepay.Decryptor([merchant], insecure_test_root_pem=read("Vectors/trust/test-root.pem")) as decryptor:
    code, result = decryptor.decrypt(read("Vectors/tokens/ec-3dsecure.json"), 1772366460)  # 2026-03-01T12:01:00Z
    print(applepay.code_name(code), result.transaction_id)
    print(result.payment_json().decode())
    result.free()  # wipes the payment JSON
    print(applepay.code_name(decryptor.decrypt(b"")[0]))  # a wrong call is an error code
