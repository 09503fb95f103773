// Results are immutable values: typed payments of both wallets, the card number masked in every toString.
package io.github.applepaydecryption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class ResultTests {
    @Test
    void anApplePayPaymentIsTypedAndItsPANMasked() {
        try (Decryptor d = TestInputs.vectorsDecryptor()) {
            Result r = d.decrypt(TestInputs.read(TestInputs.VECTORS.resolve("tokens/ec-3dsecure.json")),
                TestInputs.VECTORS_NOW);
            ApplePayPayment p = (ApplePayPayment) r.payment().orElseThrow();
            assertEquals("applePay", p.wallet());
            assertEquals(Wallet.APPLE_PAY, r.wallet());
            assertEquals("3DSecure", p.paymentDataType());
            assertTrue(p.pan().matches("[0-9]{12,19}"), p.pan());
            assertTrue(r.json().contains("\"" + p.pan() + "\""));
            assertFalse(r.toString().contains(p.pan()), r.toString());
            assertFalse(p.toString().contains(p.pan()), p.toString());
            assertTrue(r.toString().contains(Payment.maskPAN(p.pan())), r.toString());
            assertTrue(p.onlinePaymentCryptogram() != null && p.transactionAmount() != null);
            assertEquals(r.transactionId().length(), 64);
            byte[] keys = r.replayKeys().orElseThrow();
            assertEquals(32, keys.length);
            keys[0] ^= 1;
            assertNotEquals(keys[0], r.replayKeys().orElseThrow()[0], "replayKeys() hands out a copy");
            Result emv = d.decrypt(TestInputs.read(TestInputs.VECTORS.resolve("tokens/ec-emv-pkpaymenttoken.json")),
                TestInputs.VECTORS_NOW);
            assertEquals("EMV", ((ApplePayPayment) emv.payment().orElseThrow()).paymentDataType());
            assertTrue(((ApplePayPayment) emv.payment().orElseThrow()).emvData() != null);
        }
    }

    @Test
    void aGooglePayPaymentIsTypedAndItsPANMasked() {
        try (Decryptor d = TestInputs.googleDecryptor(TestInputs.GOOGLE_RECIPIENT)) {
            Result r = d.decrypt(TestInputs.googleTokens().get(3), TestInputs.GOOGLE_NOW);
            GooglePayPayment p = (GooglePayPayment) r.payment().orElseThrow();
            assertEquals("googlePay", p.wallet());
            assertEquals(Wallet.GOOGLE_PAY, r.wallet());
            assertEquals("4111000000000003", p.pan());
            assertEquals("CRYPTOGRAM_3DS", p.authMethod());
            assertEquals(r.transactionId(), p.messageId());
            assertFalse(r.toString().contains(p.pan()), r.toString());
            assertTrue(r.toString().contains("4111********0003"), r.toString());
        }
    }

    @Test
    void aRejectedResultHasNoPaymentAndSaysWhy() {
        try (Decryptor d = TestInputs.vectorsDecryptor()) {
            Result r = d.decrypt("{}".getBytes(java.nio.charset.StandardCharsets.UTF_8), TestInputs.VECTORS_NOW);
            assertEquals("malformedToken", r.code());
            assertEquals(1, r.numericCode());
            assertFalse(r.payment().isPresent());
            assertFalse(r.replayKeys().isPresent());
            assertFalse(r.message().isEmpty());
            assertTrue(r.json().startsWith("{\"error\":\"malformedToken\",\"message\":"), r.json());
        }
    }

    @Test
    void thePANMaskShowsAtMostHalf() {
        assertEquals("4761********0010", Payment.maskPAN("4761120000000010"));
        assertEquals("12******9012".length(), Payment.maskPAN("123456789012").length());
        assertEquals("12******9012", Payment.maskPAN("123456789012"));
        assertEquals("*****", Payment.maskPAN("41x11"));
    }
}
