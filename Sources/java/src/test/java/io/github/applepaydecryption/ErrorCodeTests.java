// Every stable code through the binding (0-12 as results, the misuse codes as ApplePayException), with the
// field where the code names one.
package io.github.applepaydecryption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ErrorCodeTests {
    private static final String REQUEST =
        "{\"countryCode\":\"US\",\"currencyCode\":\"USD\",\"supportedNetworks\":[\"visa\"],"
        + "\"merchantCapabilities\":[\"supports3DS\"],\"total\":{\"label\":\"Shop\",\"amount\":\"123456.78\"}}";

    @Test
    void theCodesAreTheCABIs() {
        assertEquals(6, Decryptor.abiVersion());
        String[] names = Codes.tokenCodeNames();
        assertEquals(13, names.length);
        assertEquals("replayedTransaction", Codes.name(Codes.REPLAYED_TRANSACTION));
        assertEquals("messageExpired", Codes.name(12));
        assertEquals("invalidPaymentRequest", Codes.name(104));
    }

    @Test
    void everyTokenCodeIsReachedThroughTheBinding() throws Exception {
        Set<String> seen = new LinkedHashSet<>();
        Map<String, Object> manifest = TestInputs.json(TestInputs.VECTORS.resolve("manifest.json"));
        List<byte[]> lines = new ArrayList<>();
        for (String line : new String(TestInputs.read(TestInputs.VECTORS.resolve("archive.jsonl")),
                StandardCharsets.UTF_8).split("\n")) {
            if (!line.trim().isEmpty()) lines.add(line.getBytes(StandardCharsets.UTF_8));
        }
        try (Decryptor d = TestInputs.vectorsDecryptor()) {
            // The archive: ok and codes 1-9 (the replay through the batch lanes' ledger).
            for (Result r : d.decryptBatch(lines.toArray(new byte[0][]), TestInputs.VECTORS_NOW)) {
                seen.add(r.code());
                assertTrue(r.json().startsWith(r.isOk() ? "{" : "{\"error\":\"" + r.code() + "\""), r.json());
            }
            assertEquals(manifest.get("archive") instanceof Map ? ((Map<?, ?>) manifest.get("archive")).get("expect")
                : null, codesOf(d.decryptBatch(lines.toArray(new byte[0][]), TestInputs.VECTORS_NOW)));
            // 10: the payment request binding.
            byte[] token = TestInputs.read(TestInputs.VECTORS.resolve("tokens/ec-3dsecure.json"));
            Result mismatch = d.decrypt(token, TestInputs.VECTORS_NOW, REQUEST);
            assertEquals("paymentRequestMismatch", mismatch.code());
            assertNotNull(mismatch.field());
            assertFalse(mismatch.payment().isPresent());
            seen.add(mismatch.code());
            // A request that breaks the schema is misuse, naming the member.
            ApplePayException bad = assertThrows(ApplePayException.class,
                () -> d.decrypt(token, TestInputs.VECTORS_NOW, REQUEST.replace("123456.78", "1.000")));
            assertEquals("invalidPaymentRequest", bad.code());
            assertEquals("total.amount", bad.field());
            // An Apple Pay token outside the window.
            assertEquals("signingTimeOutOfRange", d.decrypt(token, TestInputs.VECTORS_NOW.plus(Duration.ofHours(2))).code());
            assertEquals("ok", d.decryptAtSigningTime(token).code());
        }
        // 11 and 12: Google Pay's expirations (mint-tokens google's broken tokens).
        Path minted = TestInputs.googleMinted();
        try (Decryptor d = TestInputs.googleDecryptor(TestInputs.GOOGLE_RECIPIENT)) {
            Result intermediate = d.decrypt(TestInputs.read(minted.resolve("expired-intermediate.json")), TestInputs.GOOGLE_NOW);
            assertEquals("intermediateKeyExpired", intermediate.code());
            assertEquals("intermediateSigningKey.signedKey.keyExpiration", intermediate.field());
            Result message = d.decrypt(TestInputs.read(minted.resolve("expired-message.json")), TestInputs.GOOGLE_NOW);
            assertEquals("messageExpired", message.code());
            assertEquals("messageExpiration", message.field());
            seen.add(intermediate.code());
            seen.add(message.code());
            // The millisecond reference: the message expires an hour after minting, to the millisecond.
            byte[] first = TestInputs.googleTokens().get(0);
            assertEquals("ok", d.decrypt(first, TestInputs.GOOGLE_NOW).code());
            assertEquals("messageExpired", d.decrypt(first, TestInputs.GOOGLE_NOW.plus(Duration.ofHours(1))).code());
        }
        assertEquals(Set.of(Codes.tokenCodeNames()), seen);
    }

    private static List<String> codesOf(Result[] results) {
        List<String> codes = new ArrayList<>();
        for (Result r : results) codes.add(r.code());
        return codes;
    }

    @Test
    void misuseThrowsWithItsCode() {
        try (Decryptor d = TestInputs.vectorsDecryptor()) {
            assertEquals("invalidArgument", assertThrows(ApplePayException.class, () -> d.decrypt(new byte[0],
                TestInputs.VECTORS_NOW)).code());
            assertEquals("invalidArgument", assertThrows(ApplePayException.class, () -> d.decrypt(new byte[(1 << 20) + 1],
                TestInputs.VECTORS_NOW)).code());
            assertEquals("invalidArgument", assertThrows(ApplePayException.class, () -> d.decryptBatch(new byte[0][],
                TestInputs.VECTORS_NOW)).code());
            assertEquals("invalidArgument", assertThrows(ApplePayException.class, () -> d.decryptBatch(new byte[][] {
                {1}}, TestInputs.VECTORS_NOW, 257)).code());
            // A null or empty batch item is that item's invalidArgument, in the error object's shape.
            Result[] results = d.decryptBatch(new byte[][] {null, new byte[0]}, TestInputs.VECTORS_NOW);
            assertEquals("invalidArgument", results[0].code());
            assertEquals(Wallet.NONE, results[0].wallet());
            assertEquals(Wallet.NONE, results[1].wallet());
            assertTrue(results[1].json().startsWith("{\"error\":\"invalidArgument\",\"message\":"), results[1].json());
        }
    }

    @Test
    void aRefusedConfigurationThrowsInvalidConfigurationWithTheReason() {
        ApplePayException missing = assertThrows(ApplePayException.class,
            () -> Decryptor.builder().merchant("cert=/nonexistent.pem,key=/nonexistent.pem").build());
        assertEquals("invalidConfiguration", missing.code());
        assertTrue(missing.getMessage().contains("/nonexistent.pem"), missing.getMessage());
        ApplePayException unknown = assertThrows(ApplePayException.class,
            () -> Decryptor.builder().merchant("cert=a.pem,pin-value=1234").build());
        assertFalse(unknown.getMessage().contains("1234"), "a PIN is never echoed: " + unknown.getMessage());
        assertEquals("invalidConfiguration", assertThrows(ApplePayException.class,
            () -> Decryptor.builder().googleRootKeys(TestInputs.googleMinted().resolve("root_keys.json")).build()).code());
        assertEquals("invalidConfiguration", assertThrows(ApplePayException.class,
            () -> Decryptor.builder().build()).code());
        assertEquals("invalidConfiguration", assertThrows(ApplePayException.class,
            () -> Decryptor.builder().merchant(TestInputs.read(TestInputs.VECTORS.resolve("merchants/ec.cert.pem")),
                TestInputs.read(TestInputs.VECTORS.resolve("merchants/rsa.key.pem"))).build()).code());
        assertEquals("invalidConfiguration", assertThrows(ApplePayException.class,
            () -> Decryptor.builder().merchant("cert=a,key=b").window(Duration.ofSeconds(-1)).build()).code());
        assertEquals("invalidConfiguration", assertThrows(ApplePayException.class,
            () -> Decryptor.builder().insecureTestRoot(Path.of("/nonexistent-root.pem")).build()).code());
    }

    @Test
    void theByteFormsOfTheKeysWork() {
        byte[] cert = TestInputs.read(TestInputs.VECTORS.resolve("merchants/ec.cert.pem"));
        byte[] key = TestInputs.read(TestInputs.VECTORS.resolve("merchants/ec.key.pem"));
        Decryptor.Builder builder = Decryptor.builder().merchant(cert, key)
            .insecureTestRoot(TestInputs.VECTORS.resolve("trust/test-root.pem")).multiBuffer(MultiBuffer.OFF);
        try (Decryptor d = builder.build()) {
            assertEquals("ok", d.decrypt(TestInputs.read(TestInputs.VECTORS.resolve("tokens/ec-3dsecure.json")),
                TestInputs.VECTORS_NOW).code());
        }
        assertThrows(IllegalStateException.class, builder::build);
        Path minted = TestInputs.googleMinted();
        try (Decryptor d = Decryptor.builder().googleRootKeys(TestInputs.read(minted.resolve("root_keys.json")))
                .googleRecipientId(TestInputs.GOOGLE_RECIPIENT)
                .googleMerchantKey(TestInputs.read(minted.resolve("merchant_key.pem"))).build()) {
            assertEquals("ok", d.decrypt(TestInputs.googleTokens().get(1), TestInputs.GOOGLE_NOW).code());
        }
    }
}
