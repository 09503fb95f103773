// Samsung Pay through the binding: the shared vectors and every rule of `mint-tokens samsung` (cases.jsonl) give
// the CLI's code and JSON, byte for byte, and the factory's code and field; a payment given again in another
// wrapper is a replay naming cryptogram.
package io.github.applepaydecryption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class SamsungPayTests {
    static List<Path> samsungVectors() throws Exception {
        return TestInputs.folders(TestInputs.samsungVectors());
    }

    static List<byte[]> lines(Path file) {
        List<byte[]> lines = new ArrayList<>();
        for (String line : new String(TestInputs.read(file), StandardCharsets.UTF_8).split("\n")) {
            if (!line.isEmpty()) lines.add(line.getBytes(StandardCharsets.UTF_8));
        }
        return lines;
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> rules() throws Exception {
        return (List<Map<String, Object>>) Json.parse(
            new String(TestInputs.read(TestInputs.samsungMinted().resolve("cases.json")), StandardCharsets.UTF_8));
    }

    static IntStream ruleIndices() throws Exception {
        return IntStream.range(0, rules().size());
    }

    private static Decryptor mintedDecryptor() {
        Path minted = TestInputs.samsungMinted();
        return Decryptor.builder()
            .samsungKey(minted.resolve("merchant_key.pem").toString())
            .samsungKey(minted.resolve("merchant_key_2.pem"))
            .build();
    }

    /** The CLI's code: "ok" for exit 0, else the error object's. */
    private static String cliCode(TestInputs.CliRun run) {
        if (run.status == 0) return "ok";
        return String.valueOf(((Map<?, ?>) Json.parse(run.stdout)).get("error"));
    }

    @Test
    void theSamsungVectorsAndCasesAreThere() throws Exception {
        assertTrue(samsungVectors().size() >= 2, "Samsung vectors: " + samsungVectors());
        assertTrue(rules().size() >= 30, "mint-tokens samsung's cases: " + rules().size());
        assertEquals(rules().size(), lines(TestInputs.samsungMinted().resolve("cases.jsonl")).size());
    }

    @ParameterizedTest
    @MethodSource("samsungVectors")
    void aSamsungVectorDecryptsToItsPlaintextAsTheCLIDoes(Path folder) throws Exception {
        Map<String, Object> meta = TestInputs.json(folder.resolve("meta.json"));
        Map<String, Object> expected = TestInputs.json(folder.resolve("expected.json"));
        Instant now = Instant.ofEpochMilli(Long.parseLong(meta.get("now").toString()));
        List<String> arguments = new ArrayList<>(List.of("decrypt", folder.resolve("token.json").toString(),
            "--now", now.toString()));
        Decryptor.Builder builder = Decryptor.builder();
        for (Object file : (List<?>) meta.get("keyFiles")) {
            arguments.add("--samsung-key");
            arguments.add(folder.resolve((String) file).toString());
            builder.samsungKey(folder.resolve((String) file));
        }
        TestInputs.CliRun cli = TestInputs.runCli(arguments);
        byte[] token = TestInputs.read(folder.resolve("token.json"));
        try (Decryptor d = builder.build()) {
            Result r = d.decrypt(token, now);
            assertEquals(expected.get("outcome"), r.code(), r.message());
            assertEquals(Wallet.SAMSUNG_PAY, r.wallet());
            assertEquals(cliCode(cli), r.code());
            assertEquals(cli.stdout, r.json());
            SamsungPayPayment p = (SamsungPayPayment) r.payment().orElseThrow();
            assertEquals("samsungPay", p.wallet());
            assertEquals(expected.get("tokenPAN"), p.pan());
            assertEquals(((List<?>) meta.get("keyKids")).get(0), p.kid());
            assertFalse(p.toString().contains(p.pan()), p.toString());
            assertFalse(p.toString().contains(p.cryptogram()), p.toString());
            // The plaintext's members, as the repository asserts them.
            Map<?, ?> plaintext = (Map<?, ?>) Json.parse((String) expected.get("plaintext"));
            assertEquals(plaintext.get("cryptogram"), p.cryptogram());
            assertEquals(plaintext.get("amount"), p.amount());
            assertEquals(plaintext.get("currency_code"), p.currencyCode());
            Result[] batch = d.decryptBatch(new byte[][] {token}, now, 1);
            assertEquals(r.json(), batch[0].json());
        }
    }

    @ParameterizedTest
    @MethodSource("ruleIndices")
    void eachRuleOfTheFactoryGivesItsCodeAndFieldAsTheCLIDoes(int index) throws Exception {
        Path minted = TestInputs.samsungMinted();
        Map<String, Object> rule = rules().get(index);
        byte[] token = lines(minted.resolve("cases.jsonl")).get(index);
        Path file = Files.createTempFile("samsung-case", ".json");
        try (Decryptor d = mintedDecryptor()) {
            Files.write(file, token);
            TestInputs.CliRun cli = TestInputs.runCli(List.of("decrypt", file.toString(),
                "--samsung-key", minted.resolve("merchant_key.pem").toString(),
                "--samsung-key", minted.resolve("merchant_key_2.pem").toString(),
                "--now", TestInputs.SAMSUNG_NOW.toString()));
            Result r = d.decrypt(token, TestInputs.SAMSUNG_NOW);
            String name = (String) rule.get("name");
            assertEquals(rule.get("code"), r.code(), name + ": " + r.message());
            assertEquals(rule.get("field"), r.field(), name);
            assertEquals(Wallet.SAMSUNG_PAY, r.wallet(), name);
            assertEquals(cliCode(cli), r.code(), name);
            assertEquals(cli.stdout, r.json(), name);
            Result[] batch = d.decryptBatch(new byte[][] {token}, TestInputs.SAMSUNG_NOW, 1);
            assertEquals(r.json(), batch[0].json(), name);
        } finally {
            Files.deleteIfExists(file);
        }
    }

    @Test
    void aPaymentGivenAgainInAnotherWrapperIsAReplayNamingCryptogram() throws Exception {
        Path minted = TestInputs.samsungMinted();
        byte[][] tokens = {TestInputs.read(minted.resolve("token-app.json")),
            TestInputs.read(minted.resolve("token-web.json")), TestInputs.read(minted.resolve("token.jwe"))};
        try (Decryptor d = mintedDecryptor()) {
            for (int lanes : new int[] {1, 2}) {
                Result[] results = d.decryptBatch(tokens, TestInputs.SAMSUNG_NOW, lanes);
                assertEquals("ok", results[0].code(), results[0].message());
                for (int i = 1; i < tokens.length; i++) {
                    assertEquals("replayedTransaction", results[i].code(), "lanes " + lanes + ", token " + i);
                    assertEquals(Wallet.SAMSUNG_PAY.replayField(), results[i].field());
                    assertEquals(Wallet.SAMSUNG_PAY, results[i].wallet());
                }
            }
        }
    }
}
