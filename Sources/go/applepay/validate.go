package applepay

import "strings"

// validate refuses, before anything reaches the library, what a C string cannot carry and what would
// silently mean something else: a text option holding a NUL byte (C reads it cut short there, so
// "ECv2SigningOnly\x00off" would be ECv2SigningOnly) and a GooglePay whose ProtocolVersions is empty but
// not nil (nil means the default, ECv1 and ECv2; an empty list names no version, and is refused rather
// than read as the default).
func validate(merchants []Merchant, options Options) error {
	refuse := func(message string) error { return &ConfigError{InvalidConfiguration, message} }
	type text struct{ name, value string }
	var texts []text
	for _, m := range merchants {
		for _, s := range []*string{m.identifier, m.keyPassword, m.password, &m.uri} {
			if s != nil {
				texts = append(texts, text{"a Merchant", *s})
			}
		}
	}
	if g := options.GooglePay; g != nil {
		if g.ProtocolVersions != nil && len(g.ProtocolVersions) == 0 {
			return refuse("GooglePay.ProtocolVersions is empty: name at least one version, or leave it nil for ECv1 and ECv2")
		}
		for _, id := range g.RecipientIDs {
			texts = append(texts, text{"GooglePay.RecipientIDs", id})
		}
		for _, key := range g.PKCS11Keys {
			texts = append(texts, text{"GooglePay.PKCS11Keys", key.URI})
		}
		for _, version := range g.ProtocolVersions {
			texts = append(texts, text{"GooglePay.ProtocolVersions", version})
		}
	}
	for _, spec := range options.SamsungPayKeys {
		texts = append(texts, text{"SamsungPayKeys", spec})
	}
	for _, t := range texts {
		if strings.IndexByte(t.value, 0) >= 0 {
			return refuse(t.name + " holds a text with a NUL byte, which a C string cannot carry")
		}
	}
	return nil
}
