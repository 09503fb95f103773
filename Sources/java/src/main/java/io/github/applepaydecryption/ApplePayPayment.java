// An Apple Pay token's decrypted payment data, typed (the members Apple documents for paymentData).
package io.github.applepaydecryption;

import java.util.Map;

/** An Apple Pay payment: the decrypted {@code paymentData} (3-D Secure or EMV). */
public final class ApplePayPayment extends Payment {
    private final String pan;
    private final String expirationDate;
    private final String currencyCode;
    private final String transactionAmount;
    private final String cardholderName;
    private final String deviceManufacturerIdentifier;
    private final String paymentDataType;
    private final String onlinePaymentCryptogram;
    private final String eciIndicator;
    private final String emvData;
    private final String encryptedPINData;
    private final String merchantTokenIdentifier;

    ApplePayPayment(String json, Map<String, Object> object) {
        super(json);
        pan = Json.text(object, "applicationPrimaryAccountNumber");
        expirationDate = Json.text(object, "applicationExpirationDate");
        currencyCode = Json.text(object, "currencyCode");
        transactionAmount = Json.text(object, "transactionAmount");
        cardholderName = Json.text(object, "cardholderName");
        deviceManufacturerIdentifier = Json.text(object, "deviceManufacturerIdentifier");
        paymentDataType = Json.text(object, "paymentDataType");
        Map<String, Object> data = Json.object(object, "paymentData");
        onlinePaymentCryptogram = Json.text(data, "onlinePaymentCryptogram");
        eciIndicator = Json.text(data, "eciIndicator");
        emvData = Json.text(data, "emvData");
        encryptedPINData = Json.text(data, "encryptedPINData");
        merchantTokenIdentifier = Json.text(object, "merchantTokenIdentifier");
    }

    @Override
    public String wallet() {
        return "applePay";
    }

    /** applicationPrimaryAccountNumber: the device account number, in clear. */
    @Override
    public String pan() {
        return pan;
    }

    /** applicationExpirationDate, YYMMDD. */
    public String applicationExpirationDate() {
        return expirationDate;
    }

    /** currencyCode, ISO 4217 numeric (e.g. "840"). */
    public String currencyCode() {
        return currencyCode;
    }

    /** transactionAmount in the currency's minor units, as written. */
    public String transactionAmount() {
        return transactionAmount;
    }

    public String cardholderName() {
        return cardholderName;
    }

    public String deviceManufacturerIdentifier() {
        return deviceManufacturerIdentifier;
    }

    /** "3DSecure" or "EMV". */
    public String paymentDataType() {
        return paymentDataType;
    }

    /** paymentData.onlinePaymentCryptogram (3-D Secure), or null. */
    public String onlinePaymentCryptogram() {
        return onlinePaymentCryptogram;
    }

    /** paymentData.eciIndicator, or null. */
    public String eciIndicator() {
        return eciIndicator;
    }

    /** paymentData.emvData (EMV), or null. */
    public String emvData() {
        return emvData;
    }

    /** paymentData.encryptedPINData (EMV), or null. */
    public String encryptedPINData() {
        return encryptedPINData;
    }

    /** merchantTokenIdentifier (merchant tokens), or null. */
    public String merchantTokenIdentifier() {
        return merchantTokenIdentifier;
    }

    @Override
    public String toString() {
        return "ApplePayPayment[pan=" + maskPAN(pan) + ", expiration=" + expirationDate + ", amount="
            + transactionAmount + ", currency=" + currencyCode + ", type=" + paymentDataType + "]";
    }
}
