// A Samsung Pay token's decrypted payment, typed (the JWE's plaintext and the kid of the key that opened it).
package io.github.applepaydecryption;

import java.util.Map;

/**
 * A Samsung Pay payment: amount, currency_code, utc, eci_indicator, tokenPAN, tokenPanExpiration, cryptogram and
 * the kid of the merchant key that opened it. Nothing in a Samsung Pay token is signed: this says the token opened
 * under your key, was fresh, matched the request and was not a replay, not that Samsung sent it.
 */
public final class SamsungPayPayment extends Payment {
    private final String version;
    private final String kid;
    private final String amount;
    private final String currencyCode;
    private final String utc;
    private final String eciIndicator;
    private final String tokenPAN;
    private final String tokenPanExpiration;
    private final String cryptogram;
    private final String cardholderName;

    SamsungPayPayment(String json, Map<String, Object> object) {
        super(json);
        version = Json.text(object, "version");
        kid = Json.text(object, "kid");
        amount = Json.text(object, "amount");
        currencyCode = Json.text(object, "currency_code");
        utc = Json.text(object, "utc");
        eciIndicator = Json.text(object, "eci_indicator");
        tokenPAN = Json.text(object, "tokenPAN");
        tokenPanExpiration = Json.text(object, "tokenPanExpiration");
        cryptogram = Json.text(object, "cryptogram");
        cardholderName = Json.text(object, "cardholder_name");
    }

    @Override
    public String wallet() {
        return "samsungPay";
    }

    /** tokenPAN, in clear. */
    @Override
    public String pan() {
        return tokenPAN;
    }

    /** The envelope's 3DS.version ("100"), or null for a bare JWE. */
    public String version() {
        return version;
    }

    /** The kid of the merchant key that opened the token. */
    public String kid() {
        return kid;
    }

    /** The amount in minor units, as written. */
    public String amount() {
        return amount;
    }

    public String currencyCode() {
        return currencyCode;
    }

    /** utc: milliseconds since the epoch, as written (the freshness window's instant). */
    public String utc() {
        return utc;
    }

    public String eciIndicator() {
        return eciIndicator;
    }

    /** tokenPanExpiration, MMYY. */
    public String tokenPanExpiration() {
        return tokenPanExpiration;
    }

    /** The 3-D Secure cryptogram: what replays are judged by. */
    public String cryptogram() {
        return cryptogram;
    }

    /** cardholder_name, or null. */
    public String cardholderName() {
        return cardholderName;
    }

    @Override
    public String toString() {
        return "SamsungPayPayment[kid=" + kid + ", tokenPAN=" + maskPAN(tokenPAN) + ", expiration=" + tokenPanExpiration
            + ", amount=" + amount + " " + currencyCode + ", utc=" + utc + "]";
    }
}
