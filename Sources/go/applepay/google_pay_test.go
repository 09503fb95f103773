// Google Pay through cgo: the shared Google vectors with their expected outcomes, and factory tokens
// (APPLEPAY_GOOGLE_MINTED, a `mint-tokens google` directory) decrypting or refused with their codes.
package applepay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The factory's clock (mint-tokens google): 2026-03-01T12:00:00Z; messages expire an hour later.
const googleNow int64 = 1772366400
const googleRecipient = "merchant:12345678901234567890"

// skipWithoutShared skips a test that reads ../shared where it is absent (a public clone), naming what is
// missing; APPLEPAY_REQUIRE_SHARED=1 (set by CI) makes the absence a failure instead.
func skipWithoutShared(t *testing.T, dir, what string) {
	t.Helper()
	if info, err := os.Stat(dir); (err != nil || !info.IsDir()) && os.Getenv("APPLEPAY_REQUIRE_SHARED") != "1" {
		t.Skipf("%s missing at %s (set APPLEPAY_REQUIRE_SHARED=1 to fail instead)", what, dir)
	}
}

func googleVectors() string {
	if dir := os.Getenv("APPLEPAY_GOOGLE_VECTORS"); dir != "" {
		return dir
	}
	return filepath.Join(root, "..", "shared", "vectors", "google")
}

func vectorDecryptor(t *testing.T, folder, recipient string) (*Decryptor, int64) {
	t.Helper()
	var meta struct {
		RecipientID string `json:"recipientId"`
		Now         int64  `json:"now"`
	}
	if err := json.Unmarshal(read(t, folder, "meta.json"), &meta); err != nil {
		t.Fatal(err)
	}
	if recipient == "" {
		recipient = meta.RecipientID
	}
	entries, _ := os.ReadDir(folder)
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "merchant_key") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	google := &GooglePay{RootKeys: read(t, folder, "root_keys.json"), RecipientIDs: []string{recipient}}
	for _, name := range names {
		google.MerchantKeys = append(google.MerchantKeys, read(t, folder, name))
	}
	d, err := NewDecryptor(nil, Options{GooglePay: google})
	if err != nil {
		t.Fatal(err)
	}
	return d, meta.Now / 1000
}

func TestEachSharedGoogleVectorGivesItsExpectedOutcome(t *testing.T) {
	// The "ok" messages are not payments (Tink's "plaintext", "blah"): verified and decrypted, then
	// refused by the payment reading as InvalidPayload.
	outcomes := map[string][]Code{"ok": {InvalidPayload}, "malformed": {MalformedToken},
		"invalidSignature": {InvalidSignature}, "decryptionFailed": {DecryptionFailed, UnknownMerchantKey}}
	skipWithoutShared(t, googleVectors(), "the shared Google Pay vectors")
	entries, err := os.ReadDir(googleVectors())
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, e := range entries {
		folder := filepath.Join(googleVectors(), e.Name())
		if _, err := os.Stat(filepath.Join(folder, "token.json")); err != nil {
			continue
		}
		seen++
		var expected struct {
			Outcome string `json:"outcome"`
		}
		if err := json.Unmarshal(read(t, folder, "expected.json"), &expected); err != nil {
			t.Fatal(err)
		}
		d, now := vectorDecryptor(t, folder, "")
		code, result := d.Decrypt(read(t, folder, "token.json"), now)
		allowed := outcomes[expected.Outcome]
		found := false
		for _, c := range allowed {
			found = found || c == code
		}
		if !found {
			t.Errorf("%s: got %v (%s), want one of %v", e.Name(), code, *result.Message(), allowed)
		} else if expected.Outcome == "ok" && !strings.HasPrefix(*result.Message(), "the decrypted message") {
			t.Errorf("%s: verified and decrypted, then refused for %q", e.Name(), *result.Message())
		}
		result.Free()
		d.Free()
		if strings.HasPrefix(e.Name(), "dotnet-ecv2") {
			other, now := vectorDecryptor(t, folder, "merchant:not-the-recipient")
			if code, result := other.Decrypt(read(t, folder, "token.json"), now); code != InvalidSignature {
				t.Errorf("%s for another recipient: got %v, want invalidSignature", e.Name(), code)
			} else {
				result.Free()
			}
			other.Free()
		}
	}
	if seen < 9 {
		t.Fatalf("found %d shared Google vectors in %s, expected 9", seen, googleVectors())
	}
}

func googleMinted(t *testing.T, recipient string) (*Decryptor, string, [][]byte) {
	t.Helper()
	dir := os.Getenv("APPLEPAY_GOOGLE_MINTED")
	if dir == "" {
		t.Fatal("set APPLEPAY_GOOGLE_MINTED to a directory made by `mint-tokens google DIR N`")
	}
	d, err := NewDecryptor(nil, Options{GooglePay: &GooglePay{
		RootKeys: read(t, dir, "root_keys.json"), RecipientIDs: []string{"gateway:someone-else", recipient},
		MerchantKeys: [][]byte{read(t, dir, "merchant_key.pem")}}})
	if err != nil {
		t.Fatal(err)
	}
	var tokens [][]byte
	for _, line := range bytes.Split(read(t, dir, "tokens.jsonl"), []byte("\n")) {
		if len(line) > 0 {
			tokens = append(tokens, line)
		}
	}
	return d, dir, tokens
}

func TestFactoryGoogleTokensDecryptWithGoogleKeysAlone(t *testing.T) {
	d, _, tokens := googleMinted(t, googleRecipient)
	defer d.Free()
	for i, token := range tokens[:20] {
		code, result := d.Decrypt(token, googleNow)
		if code != OK {
			t.Fatalf("token %d: %v %s", i, code, *result.Message())
		}
		var payment struct {
			MessageID string `json:"messageId"`
			Details   struct {
				PAN string `json:"pan"`
			} `json:"paymentMethodDetails"`
		}
		if err := json.Unmarshal(result.PaymentJSON(), &payment); err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("google-cabi-%d", i)
		if payment.MessageID != id || *result.TransactionID() != id || payment.Details.PAN != fmt.Sprintf("41110000%08d", i) {
			t.Fatalf("token %d: messageId %q, transactionId %q, pan %q", i, payment.MessageID, *result.TransactionID(), payment.Details.PAN)
		}
		result.Free()
	}
}

func TestBrokenFactoryGoogleTokensGetTheirDocumentedCodes(t *testing.T) {
	d, dir, tokens := googleMinted(t, googleRecipient)
	defer d.Free()
	cases := []struct {
		name  string
		token []byte
		at    int64
		want  Code
	}{
		{"expired intermediate key", read(t, dir, "expired-intermediate.json"), googleNow, IntermediateKeyExpired},
		{"expired message", read(t, dir, "expired-message.json"), googleNow, MessageExpired},
		{"message expired at the reference time", tokens[0], googleNow + 3601, MessageExpired},
		{"bad tag", read(t, dir, "bad-tag.json"), googleNow, DecryptionFailed},
	}
	for _, c := range cases {
		code, result := d.Decrypt(c.token, c.at)
		if code != c.want || result.PaymentJSON() != nil {
			t.Errorf("%s: got %v (%s), want %v", c.name, code, *result.Message(), c.want)
		}
		result.Free()
	}
	if IntermediateKeyExpired.String() != "intermediateKeyExpired" || MessageExpired.String() != "messageExpired" {
		t.Errorf("code names: %s, %s", IntermediateKeyExpired, MessageExpired)
	}
	other, _, _ := googleMinted(t, "merchant:99999")
	defer other.Free()
	if code, result := other.Decrypt(tokens[0], googleNow); code != InvalidSignature {
		t.Errorf("another recipient id: got %v (%s), want invalidSignature", code, *result.Message())
	}
}

func TestAGoogleBatchJudgesReplays(t *testing.T) {
	d, dir, tokens := googleMinted(t, googleRecipient)
	defer d.Free()
	batch := [][]byte{tokens[0], tokens[1], tokens[0], read(t, dir, "bad-tag.json")}
	code, results := d.DecryptBatch(batch, googleNow, 2)
	if code != OK {
		t.Fatal(code)
	}
	var got []Code
	for _, r := range results {
		got = append(got, r.Code())
		r.Free()
	}
	want := []Code{OK, OK, ReplayedTransaction, DecryptionFailed}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestAReferenceInMillisecondsJudgesExpiryToTheMillisecond(t *testing.T) {
	dir := os.Getenv("APPLEPAY_GOOGLE_MINTED")
	if dir == "" {
		t.Fatal("set APPLEPAY_GOOGLE_MINTED to a directory made by `mint-tokens google DIR N`")
	}
	d, err := NewDecryptor(nil, Options{ReferenceInMilliseconds: true, GooglePay: &GooglePay{
		RootKeys: read(t, dir, "root_keys.json"), RecipientIDs: []string{googleRecipient},
		MerchantKeys: [][]byte{read(t, dir, "merchant_key.pem")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free()
	token := bytes.SplitN(read(t, dir, "tokens.jsonl"), []byte("\n"), 2)[0]
	// The factory's messages expire an hour after its clock, on a whole second.
	expiry := (googleNow + 3600) * 1000
	for _, c := range []struct {
		at   int64
		want Code
	}{{expiry - 1, OK}, {expiry, MessageExpired}} {
		code, result := d.Decrypt(token, c.at)
		if code != c.want {
			t.Errorf("at %d ms: got %v (%s), want %v", c.at, code, *result.Message(), c.want)
		}
		result.Free()
	}
}

func casesDecryptor(t *testing.T, dir, rootKeys string) *Decryptor {
	t.Helper()
	d, err := NewDecryptor(nil, Options{GooglePay: &GooglePay{
		RootKeys: read(t, dir, rootKeys), RecipientIDs: []string{googleRecipient},
		MerchantKeys: [][]byte{read(t, dir, "merchant_key.pem"), read(t, dir, "merchant_key_2.pem")}}})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// mint-tokens google's cases.jsonl: one token per rule of the format, each with its code in cases.json; and the
// two root keys documents under which a good ECv2 token verifies nothing.
func TestEveryRuleOfTheFormatGivesItsCode(t *testing.T) {
	dir := os.Getenv("APPLEPAY_GOOGLE_MINTED")
	if dir == "" {
		t.Fatal("set APPLEPAY_GOOGLE_MINTED to a directory made by `mint-tokens google DIR N`")
	}
	var cases []struct {
		Name string `json:"name"`
		Code string `json:"code"`
	}
	if err := json.Unmarshal(read(t, dir, "cases.json"), &cases); err != nil {
		t.Fatal(err)
	}
	tokens := bytes.Split(bytes.TrimSpace(read(t, dir, "cases.jsonl")), []byte("\n"))
	if len(tokens) != len(cases) || len(cases) < 16 {
		t.Fatalf("%d tokens, %d cases", len(tokens), len(cases))
	}
	d := casesDecryptor(t, dir, "root_keys.json")
	defer d.Free()
	for i, c := range cases {
		code, result := d.Decrypt(tokens[i], googleNow)
		if code.String() != c.Code {
			t.Errorf("%s: got %v (%s), want %s", c.Name, code, *result.Message(), c.Code)
		}
		result.Free()
	}
	for _, rootKeys := range []string{"root_keys_ecv1_only.json", "root_keys_expired.json"} {
		other := casesDecryptor(t, dir, rootKeys)
		if code, result := other.Decrypt(tokens[0], googleNow); code != InvalidSignature {
			t.Errorf("%s: got %v (%s), want invalidSignature", rootKeys, code, *result.Message())
		}
		other.Free()
	}
}

// Issue 44: ECv1 and ECv2 unless ProtocolVersions names others (naming replaces the default; ECv2SigningOnly
// only when named); a token of a version not accepted is UnsupportedVersion, field protocolVersion; a payment
// says its protocolVersion and the recipient id that verified it.
func TestTheProtocolVersionsAccepted(t *testing.T) {
	dir := os.Getenv("APPLEPAY_GOOGLE_MINTED")
	if dir == "" {
		t.Fatal("set APPLEPAY_GOOGLE_MINTED to a directory made by `mint-tokens google DIR N`")
	}
	var cases []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(read(t, dir, "cases.json"), &cases); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(read(t, dir, "cases.jsonl"), []byte("\n"))
	token := map[string][]byte{}
	for i, c := range cases {
		token[c.Name] = lines[i]
	}
	decryptor := func(versions []string) *Decryptor {
		d, err := NewDecryptor(nil, Options{GooglePay: &GooglePay{
			RootKeys: read(t, dir, "root_keys.json"), RecipientIDs: []string{googleRecipient},
			MerchantKeys: [][]byte{read(t, dir, "merchant_key.pem")}, ProtocolVersions: versions}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	expect := func(d *Decryptor, name string, want Code, version string) {
		t.Helper()
		code, result := d.Decrypt(token[name], googleNow)
		defer result.Free()
		if code != want {
			t.Errorf("%s: got %v (%s), want %v", name, code, *result.Message(), want)
			return
		}
		if want == UnsupportedVersion && (result.Field() == nil || *result.Field() != "protocolVersion") {
			t.Errorf("%s: field %v, want protocolVersion", name, result.Field())
		}
		if want == OK {
			var payment map[string]any
			if err := json.Unmarshal(result.PaymentJSON(), &payment); err != nil {
				t.Fatal(err)
			}
			if payment["protocolVersion"] != version || payment["recipientId"] != googleRecipient {
				t.Errorf("%s: the payment does not say its version and recipient: %v", name, payment)
			}
		}
	}
	d := decryptor(nil)
	expect(d, "ecv1", OK, "ECv1")
	expect(d, "ecv2", OK, "ECv2")
	expect(d, "ecv2-signing-only", UnsupportedVersion, "")
	d.Free()
	d = decryptor([]string{"ECv2SigningOnly"})
	expect(d, "ecv2-signing-only", OK, "ECv2SigningOnly")
	expect(d, "ecv2", UnsupportedVersion, "")
	d.Free()
	d = decryptor([]string{"ECv2"})
	expect(d, "ecv1", UnsupportedVersion, "")
	d.Free()
	if _, err := NewDecryptor(nil, Options{GooglePay: &GooglePay{
		RootKeys: read(t, dir, "root_keys.json"), RecipientIDs: []string{googleRecipient},
		ProtocolVersions: []string{"ECv3"}}}); err == nil {
		t.Error("ECv3 was accepted as a protocol version")
	}
}

// The attack review of issue 44 item 3: an empty (non-nil) ProtocolVersions and a text with a NUL byte were
// read as the default and as the text cut short (ECv2SigningOnly accepted); both are InvalidConfiguration now.
func TestConfigurationThatCStringsCannotCarryIsRefused(t *testing.T) {
	dir := os.Getenv("APPLEPAY_GOOGLE_MINTED")
	if dir == "" {
		t.Fatal("set APPLEPAY_GOOGLE_MINTED to a directory made by `mint-tokens google DIR N`")
	}
	google := func(versions []string, recipient string) Options {
		return Options{GooglePay: &GooglePay{
			RootKeys: read(t, dir, "root_keys.json"), RecipientIDs: []string{recipient},
			MerchantKeys: [][]byte{read(t, dir, "merchant_key.pem")}, ProtocolVersions: versions}}
	}
	for name, options := range map[string]Options{
		"an empty ProtocolVersions":          google([]string{}, googleRecipient),
		"a version with a NUL byte":          google([]string{"ECv2SigningOnly\x00off"}, googleRecipient),
		"a recipient id with a NUL byte":     google(nil, googleRecipient+"\x00other"),
		"a Samsung Pay spec with a NUL byte": {SamsungPayKeys: []string{"key.pem\x00"}},
	} {
		_, err := NewDecryptor(nil, options)
		var config *ConfigError
		if !errors.As(err, &config) || config.Code != InvalidConfiguration {
			t.Errorf("%s: got %v, want InvalidConfiguration", name, err)
		}
	}
	d, err := NewDecryptor(nil, google(nil, googleRecipient))
	if err != nil {
		t.Fatalf("nil ProtocolVersions (the default): %v", err)
	}
	d.Free()
}
