// A decrypted payment of any wallet, typed: ApplePayPayment, GooglePayPayment or SamsungPayPayment.
package io.github.applepaydecryption;

import java.util.Map;

/**
 * The decrypted payment of a token that verified ({@link Result#payment()}). {@link #json()} is the payment
 * object exactly as the engine wrote it (card number in clear); {@link #toString()} masks the card number.
 */
public abstract class Payment {
    private final String json;

    Payment(String json) {
        this.json = json;
    }

    /** "applePay", "googlePay" or "samsungPay". */
    public abstract String wallet();

    /** The card (or device) number, in clear: copy it only where you must. */
    public abstract String pan();

    /** The payment object as the engine wrote it, card number in clear. */
    public String json() {
        return json;
    }

    /**
     * The payment of a result's JSON: a Samsung Pay payment says {@code "wallet":"samsungPay"}; a Google Pay message
     * has messageId and paymentMethod.
     */
    static Payment of(String json) {
        Object parsed = Json.parse(json);
        if (!(parsed instanceof Map)) throw new IllegalArgumentException("the payment JSON is not an object");
        @SuppressWarnings("unchecked")
        Map<String, Object> object = (Map<String, Object>) parsed;
        if ("samsungPay".equals(object.get("wallet"))) return new SamsungPayPayment(json, object);
        if (object.containsKey("paymentMethod") && object.containsKey("messageId")) {
            return new GooglePayPayment(json, object);
        }
        return new ApplePayPayment(json, object);
    }

    /** At most the first 6 and last 4 digits, never more than half of them; anything but digits masked whole. */
    static String maskPAN(String pan) {
        if (pan == null) return null;
        boolean digits = !pan.isEmpty() && pan.chars().allMatch(c -> c >= '0' && c <= '9');
        int budget = pan.length() / 2, tail = digits ? Math.min(4, budget) : 0;
        int head = digits ? Math.min(6, budget - tail) : 0;
        StringBuilder out = new StringBuilder(pan.length());
        for (int i = 0; i < pan.length(); i++) {
            out.append(i < head || i >= pan.length() - tail ? pan.charAt(i) : '*');
        }
        return out.toString();
    }
}
