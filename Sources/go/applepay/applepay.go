// Package applepay is the Go binding of libapplepay, the C ABI in Sources/ApplePayC/include/applepay.h.
//
// The library and header come from pkg-config (package applepay): the release tarball's
// lib/pkgconfig/applepay.pc (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig, or installed system-wide), or, in a
// checkout after swift build -c release --product applepay, Sources/ApplePayC/applepay-uninstalled.pc
// (PKG_CONFIG_PATH=CHECKOUT/Sources/ApplePayC). The .pc files set no run path (a relative PKG_CONFIG_PATH
// would make it relative): a program finds libapplepay.so.N through LD_LIBRARY_PATH or ldconfig.
package applepay

/*
#cgo pkg-config: applepay
#include <stdlib.h>
#include <string.h>
#include "applepay.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// ABIVersion is the AP_ABI_VERSION of the header this package was compiled with.
const ABIVersion = C.AP_ABI_VERSION

// Code is an ap_code: OK, one of the library's stable token codes, or ABI misuse (100+).
type Code int32

const (
	OK                        Code = C.AP_OK
	MalformedToken            Code = C.AP_MALFORMED_TOKEN
	UnsupportedVersion        Code = C.AP_UNSUPPORTED_VERSION
	InvalidSignature          Code = C.AP_INVALID_SIGNATURE
	UntrustedCertificateChain Code = C.AP_UNTRUSTED_CERTIFICATE_CHAIN
	SigningTimeOutOfRange     Code = C.AP_SIGNING_TIME_OUT_OF_RANGE
	UnknownMerchantKey        Code = C.AP_UNKNOWN_MERCHANT_KEY
	DecryptionFailed          Code = C.AP_DECRYPTION_FAILED
	InvalidPayload            Code = C.AP_INVALID_PAYLOAD
	ReplayedTransaction       Code = C.AP_REPLAYED_TRANSACTION
	PaymentRequestMismatch    Code = C.AP_PAYMENT_REQUEST_MISMATCH
	IntermediateKeyExpired    Code = C.AP_INTERMEDIATE_KEY_EXPIRED
	MessageExpired            Code = C.AP_MESSAGE_EXPIRED
	InvalidArgument           Code = C.AP_INVALID_ARGUMENT
	InvalidHandle             Code = C.AP_INVALID_HANDLE
	InvalidConfiguration      Code = C.AP_INVALID_CONFIGURATION
	InternalError             Code = C.AP_INTERNAL_ERROR
	InvalidPaymentRequest     Code = C.AP_INVALID_PAYMENT_REQUEST
	BufferTooSmall            Code = C.AP_BUFFER_TOO_SMALL
	NoReplayKeys              Code = C.AP_NO_REPLAY_KEYS
)

// ReferenceNow and ReferenceSigningTime are the reference values other than a Unix time (seconds, or
// milliseconds with Options.ReferenceInMilliseconds).
const (
	ReferenceNow         int64 = -1 << 63
	ReferenceSigningTime int64 = -1<<63 + 1
)

// String is the library's name of the code ("ok", "malformedToken", ...).
func (c Code) String() string { return C.GoString(C.ap_code_name(C.ap_code(c))) }

// Version is the ABI version the loaded library was built with.
func Version() uint32 { return uint32(C.ap_version()) }

// ConfigError is a failed set-up call: its code and the library's message.
type ConfigError struct {
	Code    Code
	Message string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("%v: %s", e.Code, e.Message) }

func check(code C.ap_code, e *C.ap_error) error {
	if code == C.AP_OK {
		return nil
	}
	message := ""
	if e != nil {
		message = C.GoString(&e.message[0])
	}
	return &ConfigError{Code(code), message}
}

// Merchant is a merchant's key material; NewDecryptor loads it (the library wipes its copies).
type Merchant struct {
	kind                              int
	certificate, privateKey, pkcs12   []byte
	keyPassword, password, identifier *string
	uri                               string
}

// CertificateMerchant: a merchant certificate (PEM or DER) and its private key.
func CertificateMerchant(certificate, privateKey []byte) Merchant {
	return Merchant{kind: 1, certificate: certificate, privateKey: privateKey}
}

// IdentifierMerchant: a merchant identifier (e.g. "merchant.com.example") and its private key.
func IdentifierMerchant(identifier string, privateKey []byte) Merchant {
	return Merchant{kind: 2, identifier: &identifier, privateKey: privateKey}
}

// PKCS12Merchant: a PKCS#12 file and its password.
func PKCS12Merchant(pkcs12 []byte, password string) Merchant {
	return Merchant{kind: 3, pkcs12: pkcs12, password: &password}
}

// PKCS11Merchant: a merchant certificate and an RFC 7512 URI naming its private key in a PKCS#11
// token (module-path= required; the PIN from pin-source= or pin-env=, never the URI itself).
func PKCS11Merchant(certificate []byte, uri string) Merchant {
	return Merchant{kind: 4, certificate: certificate, uri: uri}
}

// bytesArg passes a Go slice for the duration of one call (cgo allows it: no Go pointers inside).
func bytesArg(b []byte) (*C.uint8_t, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0])), C.size_t(len(b))
}

func cString(s *string) *C.char {
	if s == nil {
		return nil
	}
	return C.CString(*s)
}

func (m Merchant) add(config *C.ap_config, e *C.ap_error) C.ap_code {
	identifier, keyPassword, password := cString(m.identifier), cString(m.keyPassword), cString(m.password)
	defer C.free(unsafe.Pointer(identifier))
	defer C.free(unsafe.Pointer(keyPassword))
	defer func() {
		if password != nil {
			C.memset(unsafe.Pointer(password), 0, C.strlen(password))
			C.free(unsafe.Pointer(password))
		}
	}()
	key, keyLength := bytesArg(m.privateKey)
	switch m.kind {
	case 1:
		cert, certLength := bytesArg(m.certificate)
		return C.ap_config_add_merchant_certificate(config, cert, certLength, key, keyLength, keyPassword, identifier, e)
	case 2:
		return C.ap_config_add_merchant_identifier(config, identifier, key, keyLength, keyPassword, e)
	case 4:
		cert, certLength := bytesArg(m.certificate)
		uri := C.CString(m.uri)
		defer C.free(unsafe.Pointer(uri))
		return C.ap_config_add_merchant_pkcs11(config, cert, certLength, uri, identifier, e)
	default:
		p12, p12Length := bytesArg(m.pkcs12)
		return C.ap_config_add_merchant_pkcs12(config, p12, p12Length, password, identifier, e)
	}
}

// Options: the test-only trust root, the signing-time window (nil: 300 s), Google Pay (nil: none), and
// whether the Decrypt calls' reference counts milliseconds (Google Pay keys and messages expire to the
// millisecond) instead of seconds; ReferenceNow and ReferenceSigningTime mean the same in either unit.
type Options struct {
	InsecureTestRootPEM     []byte
	SigningTimeWindow       *int64
	GooglePay               *GooglePay
	ReferenceInMilliseconds bool
	// SamsungPayKeys: Samsung Pay merchant keys (RSA), each as the CLI's --samsung-key takes it ("PATH",
	// "key=PATH,...", "p12=PATH,...", "pkcs11=URI,pub=PATH"), read by the engine; a token's kid picks one.
	// With them, no Apple Pay merchant is needed.
	SamsungPayKeys []string
}

// GooglePay configures Google Pay tokens (told apart from Apple Pay ones by shape): Google's root signing
// keys document, the recipient ids ("merchant:ID" or "gateway:ID") and the merchant private keys (P-256,
// PEM or DER; tried in order), or keys kept in a PKCS#11 token. With it, no Apple Pay merchant is needed.
// ProtocolVersions: the protocolVersions accepted ("ECv1", "ECv2", "ECv2SigningOnly"); nil: ECv1 and ECv2
// (an empty non-nil list is refused: it names no version).
// Naming versions replaces that default; ECv2SigningOnly (card data signed, not encrypted) only when named.
type GooglePay struct {
	RootKeys         []byte
	RecipientIDs     []string
	MerchantKeys     [][]byte
	PKCS11Keys       []GooglePayPKCS11Key
	ProtocolVersions []string
}

// GooglePayPKCS11Key: a Google Pay merchant key in a PKCS#11 token, its public key (PEM or DER SPKI, or
// a certificate) and the RFC 7512 URI naming it (as for PKCS11Merchant).
type GooglePayPKCS11Key struct {
	PublicKey []byte
	URI       string
}

func (g *GooglePay) add(config *C.ap_config, e *C.ap_error) error {
	keys, length := bytesArg(g.RootKeys)
	if err := check(C.ap_config_set_google_root_keys(config, keys, length, e), e); err != nil {
		return err
	}
	for _, id := range g.RecipientIDs {
		text := C.CString(id)
		err := check(C.ap_config_add_google_recipient_id(config, text, e), e)
		C.free(unsafe.Pointer(text))
		if err != nil {
			return err
		}
	}
	for _, key := range g.MerchantKeys {
		bytes, length := bytesArg(key)
		if err := check(C.ap_config_add_google_merchant_key(config, bytes, length, nil, e), e); err != nil {
			return err
		}
	}
	for _, key := range g.PKCS11Keys {
		bytes, length := bytesArg(key.PublicKey)
		uri := C.CString(key.URI)
		err := check(C.ap_config_add_google_merchant_pkcs11(config, bytes, length, uri, e), e)
		C.free(unsafe.Pointer(uri))
		if err != nil {
			return err
		}
	}
	for _, version := range g.ProtocolVersions {
		text := C.CString(version)
		err := check(C.ap_config_add_google_protocol_version(config, text, e), e)
		C.free(unsafe.Pointer(text))
		if err != nil {
			return err
		}
	}
	return nil
}

// Decryptor is safe for use by many goroutines at once. Free clears its handle: a second Free does
// nothing, and calls after Free return InvalidHandle; a Decryptor never freed is freed by its finalizer.
type Decryptor struct {
	handle atomic.Pointer[C.ap_decryptor]
}

// NewDecryptor loads the merchants and makes a decryptor; errors are *ConfigError.
func NewDecryptor(merchants []Merchant, options Options) (*Decryptor, error) {
	if err := validate(merchants, options); err != nil {
		return nil, err
	}
	var config *C.ap_config
	var e C.ap_error
	if err := check(C.ap_config_new(&config), nil); err != nil {
		return nil, err
	}
	defer C.ap_config_free(config)
	for _, m := range merchants {
		if err := check(m.add(config, &e), &e); err != nil {
			return nil, err
		}
	}
	if options.SigningTimeWindow != nil {
		if err := check(C.ap_config_set_signing_time_window(config, C.int64_t(*options.SigningTimeWindow), &e), &e); err != nil {
			return nil, err
		}
	}
	if options.InsecureTestRootPEM != nil {
		pem, length := bytesArg(options.InsecureTestRootPEM)
		if err := check(C.ap_config_set_insecure_test_root_pem(config, pem, length, &e), &e); err != nil {
			return nil, err
		}
	}
	if options.GooglePay != nil {
		if err := options.GooglePay.add(config, &e); err != nil {
			return nil, err
		}
	}
	for _, spec := range options.SamsungPayKeys {
		text := C.CString(spec)
		err := check(C.ap_config_add_samsung_key_spec(config, text, &e), &e)
		C.free(unsafe.Pointer(text))
		if err != nil {
			return nil, err
		}
	}
	if options.ReferenceInMilliseconds {
		if err := check(C.ap_config_set_reference_unit(config, C.AP_REFERENCE_MILLISECONDS, &e), &e); err != nil {
			return nil, err
		}
	}
	var handle *C.ap_decryptor
	if err := check(C.ap_decryptor_new(config, &handle, &e), &e); err != nil {
		return nil, err
	}
	d := &Decryptor{}
	d.handle.Store(handle)
	runtime.SetFinalizer(d, (*Decryptor).Free)
	return d, nil
}

// Free releases the decryptor and clears its handle: OK, and OK without a call once already freed.
func (d *Decryptor) Free() Code {
	if h := d.handle.Swap(nil); h != nil {
		return Code(C.ap_decryptor_free(h))
	}
	return OK
}

// Result is one token's outcome; Free wipes the payment JSON held by the library. Free clears its
// handle: a second Free does nothing, and methods after Free give InvalidHandle / nil; a Result never
// freed is freed by its finalizer. Safe for concurrent use: every method copies what it reads out of
// library memory under a read lock, and Free takes the write lock, so a Free in one goroutine can never
// release the memory another goroutine is copying.
type Result struct {
	mu     sync.RWMutex
	handle *C.ap_result
}

func newResult(h *C.ap_result) *Result {
	r := &Result{handle: h}
	runtime.SetFinalizer(r, (*Result).Free)
	return r
}

// live locks the result for reading and returns its handle (nil once freed); the caller unlocks.
func (r *Result) live() *C.ap_result {
	r.mu.RLock()
	return r.handle
}

// Raw is the library handle (for tests and callers of the C ABI); nil once freed.
func (r *Result) Raw() unsafe.Pointer {
	defer r.mu.RUnlock()
	return unsafe.Pointer(r.live())
}

// resultFromRaw and decryptorFromRaw wrap a raw handle without a finalizer (tests: cgo is not
// allowed in _test.go files).
func resultFromRaw(p unsafe.Pointer) *Result {
	return &Result{handle: (*C.ap_result)(p)}
}

func decryptorFromRaw(p unsafe.Pointer) *Decryptor {
	d := &Decryptor{}
	d.handle.Store((*C.ap_decryptor)(p))
	return d
}

// Raw is the library handle (for tests and callers of the C ABI); nil once freed.
func (d *Decryptor) Raw() unsafe.Pointer { return unsafe.Pointer(d.handle.Load()) }

// Decrypt verifies and decrypts one token. The Result is nil for misuse codes (100+).
func (d *Decryptor) Decrypt(token []byte, reference int64) (Code, *Result) {
	var r *C.ap_result
	pointer, length := bytesArg(token)
	code := Code(C.ap_decrypt(d.handle.Load(), pointer, length, C.int64_t(reference), &r))
	runtime.KeepAlive(d)
	if r == nil {
		return code, nil
	}
	return code, newResult(r)
}

// DecryptExpecting verifies and decrypts one token, then checks it against the merchant's payment
// request JSON (PaymentRequestMismatch, the request member in Field). A request that breaks the schema
// is InvalidPaymentRequest with no Result and "member: reason" as the message.
func (d *Decryptor) DecryptExpecting(token, paymentRequest []byte, reference int64) (Code, *Result, string) {
	var r *C.ap_result
	var e C.ap_error
	pointer, length := bytesArg(token)
	requestPointer, requestLength := bytesArg(paymentRequest)
	code := Code(C.ap_decrypt_expecting(d.handle.Load(), pointer, length, requestPointer, requestLength, C.int64_t(reference), &r, &e))
	runtime.KeepAlive(d)
	message := ""
	if code == InvalidPaymentRequest {
		message = C.GoString(&e.message[0])
	}
	if r == nil {
		return code, nil, message
	}
	return code, newResult(r), message
}

// DecryptBatch runs the batch engine (lanes threads, 0 = one per processor) with a fresh replay
// ledger; results are in input order. The tokens are copied into C memory once: cgo forbids passing
// C an array of Go pointers.
func (d *Decryptor) DecryptBatch(tokens [][]byte, reference int64, lanes uint32) (Code, []*Result) {
	total := 0
	for _, t := range tokens {
		total += len(t)
	}
	count := len(tokens)
	block := C.malloc(C.size_t(total + 1))
	pointers := C.malloc(C.size_t(count+1) * C.size_t(unsafe.Sizeof(uintptr(0))))
	defer C.free(block)
	defer C.free(pointers)
	pointerSlice := unsafe.Slice((**C.uint8_t)(pointers), count+1)
	lengths := make([]C.size_t, count+1)
	offset := 0
	for i, t := range tokens {
		if t == nil {
			pointerSlice[i] = nil
			continue
		}
		at := unsafe.Add(block, offset)
		if len(t) > 0 {
			C.memcpy(at, unsafe.Pointer(&t[0]), C.size_t(len(t)))
		}
		pointerSlice[i], lengths[i] = (*C.uint8_t)(at), C.size_t(len(t))
		offset += len(t)
	}
	handles := make([]*C.ap_result, count+1)
	code := Code(C.ap_decrypt_batch(d.handle.Load(), (**C.uint8_t)(pointers), &lengths[0], C.size_t(count), C.int64_t(reference),
		C.uint32_t(lanes), &handles[0]))
	runtime.KeepAlive(d)
	if code != OK {
		return code, nil
	}
	results := make([]*Result, count)
	for i := range results {
		results[i] = newResult(handles[i])
	}
	return code, results
}

// Code is the result's code; InvalidHandle once freed.
func (r *Result) Code() Code {
	defer r.mu.RUnlock()
	return Code(C.ap_result_code(r.live()))
}

func goString(s *C.char) *string {
	if s == nil {
		return nil
	}
	v := C.GoString(s)
	return &v
}

// Message is the reason ("" for OK); nil once freed.
func (r *Result) Message() *string {
	defer r.mu.RUnlock() // neither Free nor the finalizer may free the result before the string is copied
	return goString(C.ap_result_message(r.live()))
}

// Field is the JSON path of the offending field, or nil.
func (r *Result) Field() *string {
	defer r.mu.RUnlock()
	return goString(C.ap_result_field(r.live()))
}

// TransactionID is the token's header.transactionId (a Google Pay token's messageId), or nil.
func (r *Result) TransactionID() *string {
	defer r.mu.RUnlock()
	return goString(C.ap_result_transaction_id(r.live()))
}

// Wallet is the wallet the result's token was read as (by its shape): WalletApplePay, WalletGooglePay,
// WalletSamsungPay, or WalletNone for a result that is ABI misuse (and once freed).
type Wallet int32

const (
	WalletNone       Wallet = C.AP_WALLET_NONE
	WalletApplePay   Wallet = C.AP_WALLET_APPLE_PAY
	WalletGooglePay  Wallet = C.AP_WALLET_GOOGLE_PAY
	WalletSamsungPay Wallet = C.AP_WALLET_SAMSUNG_PAY
)

// Wallet is the wallet of the result's token, whose field a replay names.
func (r *Result) Wallet() Wallet {
	defer r.mu.RUnlock()
	w := Wallet(C.ap_result_wallet(r.live()))
	if w < WalletNone || w > WalletSamsungPay {
		return WalletNone
	}
	return w
}

// PaymentJSON copies the payment JSON out of the library (nil unless OK). Go cannot wipe its copy:
// take only what you need.
func (r *Result) PaymentJSON() []byte {
	// Locked (and so reachable) until the bytes are copied: otherwise another goroutine's Free, or the
	// finalizer, could free and wipe the result between ap_result_payment_json and GoBytes.
	defer r.mu.RUnlock()
	var length C.size_t
	p := C.ap_result_payment_json(r.live(), &length)
	if p == nil {
		return nil
	}
	return C.GoBytes(unsafe.Pointer(p), C.int(length))
}

// ReplayKeys is the token's replay identity (transaction key, content key) when it verified and
// decrypted, also when a batch judged it ReplayedTransaction; ok is false otherwise (and once freed).
func (r *Result) ReplayKeys() (tx, content [16]byte, ok bool) {
	defer r.mu.RUnlock()
	var t, c [16]C.uint8_t
	if C.ap_result_replay_keys(r.live(), &t[0], &c[0]) != C.AP_OK {
		return tx, content, false
	}
	for i := range t {
		tx[i], content[i] = byte(t[i]), byte(c[i])
	}
	return tx, content, true
}

// Free wipes and frees the result and clears its handle: OK, and OK without a call once already freed.
func (r *Result) Free() Code {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.handle; h != nil {
		r.handle = nil
		return Code(C.ap_result_free(h))
	}
	return OK
}
