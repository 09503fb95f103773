// A Google Pay token's decrypted message, typed (ECv1 and ECv2: paymentMethodDetails' card members).
package io.github.applepaydecryption;

import java.util.Map;

/** A Google Pay payment: the decrypted message (messageId, messageExpiration, paymentMethodDetails). */
public final class GooglePayPayment extends Payment {
    private final String messageId;
    private final String messageExpiration;
    private final String paymentMethod;
    private final String gatewayMerchantId;
    private final String pan;
    private final String expirationMonth;
    private final String expirationYear;
    private final String authMethod;
    private final String cryptogram;
    private final String eciIndicator;

    GooglePayPayment(String json, Map<String, Object> object) {
        super(json);
        messageId = Json.text(object, "messageId");
        messageExpiration = Json.text(object, "messageExpiration");
        paymentMethod = Json.text(object, "paymentMethod");
        gatewayMerchantId = Json.text(object, "gatewayMerchantId");
        Map<String, Object> details = Json.object(object, "paymentMethodDetails");
        pan = Json.text(details, "pan", "dpan");
        expirationMonth = Json.text(details, "expirationMonth");
        expirationYear = Json.text(details, "expirationYear");
        authMethod = Json.text(details, "authMethod");
        cryptogram = Json.text(details, "cryptogram", "3dsCryptogram");
        eciIndicator = Json.text(details, "eciIndicator", "3dsEciIndicator");
    }

    @Override
    public String wallet() {
        return "googlePay";
    }

    /** paymentMethodDetails.pan (or dpan), in clear. */
    @Override
    public String pan() {
        return pan;
    }

    /** messageId: the transaction id replays are judged by. */
    public String messageId() {
        return messageId;
    }

    /** messageExpiration, milliseconds since the epoch, as written. */
    public String messageExpiration() {
        return messageExpiration;
    }

    /** "CARD". */
    public String paymentMethod() {
        return paymentMethod;
    }

    public String gatewayMerchantId() {
        return gatewayMerchantId;
    }

    public String expirationMonth() {
        return expirationMonth;
    }

    public String expirationYear() {
        return expirationYear;
    }

    /** "PAN_ONLY" or "CRYPTOGRAM_3DS". */
    public String authMethod() {
        return authMethod;
    }

    /** The 3-D Secure cryptogram (CRYPTOGRAM_3DS), or null. */
    public String cryptogram() {
        return cryptogram;
    }

    public String eciIndicator() {
        return eciIndicator;
    }

    @Override
    public String toString() {
        return "GooglePayPayment[messageId=" + messageId + ", pan=" + maskPAN(pan) + ", expiration=" + expirationMonth
            + "/" + expirationYear + ", authMethod=" + authMethod + "]";
    }
}
