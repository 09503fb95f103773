// The C ABI through cgo: the bundled and Apple vectors, every code, misuse, and minted factory tokens
// across goroutines. APPLEPAY_MINTED names a mint-tokens directory (Tests/CABI/run-tests.sh sets it).
package applepay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

var root = filepath.Join("..", "..", "..")

func read(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(parts...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type manifest struct {
	Now       string            `json:"now"`
	TrustRoot string            `json:"trustRoot"`
	Tokens    map[string]string `json:"tokens"`
	Archive   struct {
		Expect []string `json:"expect"`
	} `json:"archive"`
}

func bundled(t *testing.T) (*Decryptor, manifest, int64, [][]byte) {
	t.Helper()
	vectors := filepath.Join(root, "Vectors")
	var m manifest
	if err := json.Unmarshal(read(t, vectors, "manifest.json"), &m); err != nil {
		t.Fatal(err)
	}
	now, _ := time.Parse(time.RFC3339, m.Now)
	var merchants []Merchant
	for _, k := range []string{"ec", "rsa"} {
		merchants = append(merchants, CertificateMerchant(read(t, vectors, "merchants", k+".cert.pem"), read(t, vectors, "merchants", k+".key.pem")))
	}
	d, err := NewDecryptor(merchants, Options{InsecureTestRootPEM: read(t, vectors, m.TrustRoot)})
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	for _, l := range bytes.Split(read(t, vectors, "archive.jsonl"), []byte("\n")) {
		if len(l) > 0 {
			lines = append(lines, l)
		}
	}
	return d, m, now.Unix(), lines
}

func decrypt(t *testing.T, d *Decryptor, token []byte, reference int64) (Code, []byte) {
	t.Helper()
	code, r := d.Decrypt(token, reference)
	if r == nil || r.Code() != code {
		t.Fatalf("no result for code %v", code)
	}
	payment := r.PaymentJSON()
	if (payment != nil) != (code == OK) {
		t.Errorf("payment JSON presence does not match %v", code)
	}
	if r.Free() != OK || r.Free() != OK || r.Code() != InvalidHandle || r.PaymentJSON() != nil {
		t.Errorf("free, then the freed result must be an invalid handle")
	}
	return code, payment
}

func TestTheLibraryHasThisBindingsABIVersion(t *testing.T) {
	if Version() != ABIVersion {
		t.Fatalf("library ABI %d, header %d", Version(), ABIVersion)
	}
}

func TestEachBundledTokenAndArchiveLineGivesTheManifestCode(t *testing.T) {
	d, m, now, lines := bundled(t)
	defer d.Free()
	for path, want := range m.Tokens {
		if code, _ := decrypt(t, d, read(t, root, "Vectors", path), now); code.String() != want {
			t.Errorf("%s: %v, want %s", path, code, want)
		}
	}
	for i, line := range lines {
		want := m.Archive.Expect[i]
		if want == "replayedTransaction" {
			want = "ok" // a replay is only a replay within one batch
		}
		if code, _ := decrypt(t, d, line, now); code.String() != want {
			t.Errorf("line %d: %v, want %s", i+1, code, want)
		}
	}
}

func TestABatchKeepsInputOrderFlagsReplaysAndProducesEveryCode(t *testing.T) {
	d, m, now, lines := bundled(t)
	defer d.Free()
	for _, lanes := range []uint32{1, 2} {
		code, results := d.DecryptBatch(lines, now, lanes)
		if code != OK || len(results) != len(lines) {
			t.Fatalf("batch: %v", code)
		}
		seen := map[Code]bool{}
		for i, r := range results {
			seen[r.Code()] = true
			if r.Code().String() != m.Archive.Expect[i] {
				t.Errorf("lanes %d item %d: %v, want %s", lanes, i, r.Code(), m.Archive.Expect[i])
			}
			if r.Code() == ReplayedTransaction && (r.Field() == nil || *r.Field() != "header.transactionId") {
				t.Errorf("replay without its field")
			}
			// Every verified and decrypted item has replay keys, a judged replay too; no other item has.
			tx, content, ok := r.ReplayKeys()
			verified := r.Code() == OK || r.Code() == ReplayedTransaction
			if ok != verified || (ok && (tx == [16]byte{} || content == [16]byte{})) {
				t.Errorf("lanes %d item %d (%v): replay keys ok=%v", lanes, i, r.Code(), ok)
			}
			r.Free()
			if _, _, ok := r.ReplayKeys(); ok {
				t.Errorf("a freed result still had replay keys")
			}
		}
		for c := OK; c <= ReplayedTransaction; c++ {
			if !seen[c] {
				t.Errorf("code %v never produced", c)
			}
		}
	}
}

type meta struct {
	SigningTime        string  `json:"signingTime"`
	Expect             string  `json:"expect"`
	MerchantIdentifier string  `json:"merchantIdentifier"`
	KeyFile            string  `json:"keyFile"`
	CertFile           *string `json:"certFile"`
}

func TestEachAppleVectorGivesItsExpectedResultAtItsSigningTime(t *testing.T) {
	dir := os.Getenv("APPLEPAY_SHARED_VECTORS")
	if dir == "" {
		dir = filepath.Join(root, "..", "shared", "vectors", "apple")
	}
	skipWithoutShared(t, dir, "the shared Apple vectors")
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) < 9 {
		t.Fatalf("the Apple vectors are missing at %s: %v", dir, err)
	}
	for _, e := range entries {
		var m meta
		if err := json.Unmarshal(read(t, dir, e.Name(), "meta.json"), &m); err != nil {
			t.Fatal(err)
		}
		key := read(t, dir, e.Name(), m.KeyFile)
		merchant := IdentifierMerchant(m.MerchantIdentifier, key)
		if m.CertFile != nil {
			merchant = CertificateMerchant(read(t, dir, e.Name(), *m.CertFile), key)
		}
		d, err := NewDecryptor([]Merchant{merchant}, Options{})
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		at, _ := time.Parse(time.RFC3339, m.SigningTime)
		code, payment := decrypt(t, d, read(t, dir, e.Name(), "token.json"), at.Unix())
		d.Free()
		if code.String() != m.Expect {
			t.Errorf("%s: %v, want %s", e.Name(), code, m.Expect)
			continue
		}
		if code == OK {
			var got, want interface{}
			json.Unmarshal(payment, &got)
			json.Unmarshal(read(t, dir, e.Name(), "expected.json"), &want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: payment differs from expected.json", e.Name())
			}
		}
	}
}

func TestWrongCallsReturnErrorCodes(t *testing.T) {
	d, _, now, lines := bundled(t)
	if code, r := (&Decryptor{}).Decrypt(lines[0], now); code != InvalidHandle || r != nil {
		t.Errorf("nil decryptor: %v", code)
	}
	if code, _ := d.Decrypt(nil, now); code != InvalidArgument {
		t.Errorf("zero length: %v", code)
	}
	_, r := d.Decrypt(lines[0], now)
	r.Free()
	if r.Free() != OK || r.Raw() != nil || r.Code() != InvalidHandle || r.Message() != nil {
		t.Errorf("freed result must be an invalid handle")
	}
	if (&Result{}).Code() != InvalidHandle {
		t.Errorf("nil result")
	}
	if code, _ := d.DecryptBatch(nil, now, 1); code != InvalidArgument {
		t.Errorf("empty batch: %v", code)
	}
	code, results := d.DecryptBatch([][]byte{lines[0], {}, nil}, ReferenceSigningTime, 1)
	if code != OK || results[0].Code() != OK || results[1].Code() != InvalidArgument || results[2].Code() != InvalidArgument {
		t.Errorf("bad batch items must be flagged")
	}
	for _, r := range results {
		r.Free()
	}
	if code, _ := d.DecryptBatch(lines, now, 100000); code != InvalidArgument {
		t.Errorf("too many lanes: %v", code)
	}
	if d.Free() != OK || d.Free() != OK || d.Raw() != nil {
		t.Errorf("decryptor double free")
	}
	if code, _ := d.Decrypt(lines[0], now); code != InvalidHandle {
		t.Errorf("freed decryptor: %v", code)
	}
	if _, err := NewDecryptor(nil, Options{}); err == nil || err.(*ConfigError).Code != InvalidConfiguration {
		t.Errorf("no merchant: %v", err)
	}
	if _, err := NewDecryptor([]Merchant{IdentifierMerchant("merchant.x", []byte("junk"))}, Options{}); err == nil || err.(*ConfigError).Code != InvalidConfiguration {
		t.Errorf("junk key: %v", err)
	}
}

func TestMintedTokensDecryptOnManyGoroutinesSharingOneDecryptor(t *testing.T) {
	dir := os.Getenv("APPLEPAY_MINTED")
	if dir == "" {
		t.Fatal("set APPLEPAY_MINTED to a directory made by mint-tokens")
	}
	d, err := NewDecryptor([]Merchant{PKCS12Merchant(read(t, dir, "merchant.p12"), "insecure-test-password")},
		Options{InsecureTestRootPEM: read(t, dir, "insecure-test-root.pem")})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free()
	var tokens [][]byte
	for _, l := range bytes.Split(read(t, dir, "tokens.jsonl"), []byte("\n")) {
		if len(l) > 0 && len(tokens) < 2000 {
			tokens = append(tokens, l)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(tokens))
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < len(tokens); i += 8 {
				code, r := d.Decrypt(tokens[i], ReferenceSigningTime)
				if code != OK || !bytes.Contains(r.PaymentJSON(), []byte(fmt.Sprintf("4761%012d", i))) {
					errs <- fmt.Sprintf("token %d: %v", i, code)
				}
				r.Free()
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	code, results := d.DecryptBatch(tokens, ReferenceSigningTime, 0)
	if code != OK {
		t.Fatal(code)
	}
	for i, r := range results {
		if r.Code() != OK {
			t.Errorf("batch item %d: %v", i, r.Code())
		}
		r.Free()
	}
}

func TestATokenCheckedAgainstAPaymentRequestNamesTheMemberItContradicts(t *testing.T) {
	d, m, now, lines := bundled(t)
	defer d.Free()
	first := -1
	for i, expect := range m.Archive.Expect {
		if expect == "ok" {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatal("no bundled token decrypts")
	}
	// A request in a currency no bundled token uses: the token verifies, then contradicts it.
	request := []byte(`{"countryCode":"US","currencyCode":"ISK","supportedNetworks":["visa","masterCard","amex","discover"],` +
		`"merchantCapabilities":["supports3DS","supportsEMV"],"total":{"label":"Shop","amount":"1.00"}}`)
	code, r, _ := d.DecryptExpecting(lines[first], request, now)
	if code != PaymentRequestMismatch || r == nil || r.Field() == nil || *r.Field() != "currencyCode" {
		t.Fatalf("mismatch: %v", code)
	}
	if code.String() != "paymentRequestMismatch" {
		t.Errorf("name %q", code.String())
	}
	r.Free()
	code, r, message := d.DecryptExpecting(lines[first], []byte(`{"countryCode":"US"}`), now)
	if code != InvalidPaymentRequest || r != nil || !strings.HasPrefix(message, "currencyCode: ") {
		t.Fatalf("schema: %v %q", code, message)
	}
}
