// The Go binding's column of the front-end table (Tests/FrontEnds): reads the case manifest (argument 1), makes
// one Decryptor per group with its options (reference in milliseconds) and prints, as JSON, each case's code and
// field through Decrypt and through DecryptBatch of that one token, and each replay pair (a token, then the same
// payment again) through DecryptBatch.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/applepay-decryption/ApplePayDecryption/Sources/go/applepay"
)

type merchantFile struct {
	Cert *string `json:"cert"`
	ID   *string `json:"id"`
	Key  string  `json:"key"`
}

type group struct {
	Name          string         `json:"name"`
	Now           int64          `json:"nowMilliseconds"`
	MerchantFiles []merchantFile `json:"merchantFiles"`
	TrustRoot     *string        `json:"trustRoot"`
	Google        *struct {
		RootKeys     string   `json:"rootKeys"`
		RecipientIDs []string `json:"recipientIds"`
		MerchantKeys []string `json:"merchantKeys"`
	} `json:"google"`
	Samsung []string `json:"samsung"`
	Cases   []struct {
		ID        string `json:"id"`
		TokenFile string `json:"tokenFile"`
	} `json:"cases"`
}

type manifest struct {
	Groups  []group `json:"groups"`
	Replays []struct {
		ID        string `json:"id"`
		Group     string `json:"group"`
		TokenFile string `json:"tokenFile"`
		AgainFile string `json:"againFile"`
	} `json:"replays"`
}

type outcome struct {
	Code  string  `json:"code"`
	Field *string `json:"field"`
}

func read(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return b
}

func decryptor(g group) *applepay.Decryptor {
	var merchants []applepay.Merchant
	for _, m := range g.MerchantFiles {
		if m.Cert != nil {
			merchants = append(merchants, applepay.CertificateMerchant(read(*m.Cert), read(m.Key)))
		} else {
			merchants = append(merchants, applepay.IdentifierMerchant(*m.ID, read(m.Key)))
		}
	}
	options := applepay.Options{ReferenceInMilliseconds: true}
	if g.TrustRoot != nil {
		options.InsecureTestRootPEM = read(*g.TrustRoot)
	}
	if g.Google != nil {
		google := &applepay.GooglePay{RootKeys: read(g.Google.RootKeys), RecipientIDs: g.Google.RecipientIDs}
		for _, key := range g.Google.MerchantKeys {
			google.MerchantKeys = append(google.MerchantKeys, read(key))
		}
		options.GooglePay = google
	}
	options.SamsungPayKeys = g.Samsung
	d, err := applepay.NewDecryptor(merchants, options)
	if err != nil {
		panic(fmt.Sprintf("%s: %v", g.Name, err))
	}
	return d
}

func take(code applepay.Code, r *applepay.Result) outcome {
	if r == nil {
		panic(fmt.Sprintf("no result: %v", code))
	}
	defer r.Free()
	if r.Code() != code {
		panic("the result's code is not the call's")
	}
	return outcome{Code: code.String(), Field: r.Field()}
}

func batch(d *applepay.Decryptor, tokens [][]byte, now int64) []outcome {
	code, results := d.DecryptBatch(tokens, now, 1)
	if code != applepay.OK {
		panic(fmt.Sprintf("DecryptBatch: %v", code))
	}
	var out []outcome
	for _, r := range results {
		out = append(out, take(r.Code(), r))
	}
	return out
}

func main() {
	var m manifest
	if err := json.Unmarshal(read(os.Args[1]), &m); err != nil {
		panic(err)
	}
	single, batched := map[string]outcome{}, map[string]outcome{}
	replays := map[string][]outcome{}
	for _, g := range m.Groups {
		d := decryptor(g)
		for _, c := range g.Cases {
			token := read(c.TokenFile)
			single[c.ID] = take(d.Decrypt(token, g.Now))
			batched[c.ID] = batch(d, [][]byte{token}, g.Now)[0]
		}
		for _, r := range m.Replays {
			if r.Group == g.Name {
				replays[r.ID] = batch(d, [][]byte{read(r.TokenFile), read(r.AgainFile)}, g.Now)
			}
		}
		d.Free()
	}
	out, _ := json.Marshal(map[string]any{"decrypt": single, "batch": batched, "replays": replays})
	fmt.Println(string(out))
}
