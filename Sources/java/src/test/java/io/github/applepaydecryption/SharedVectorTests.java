// Every shared vector of every wallet through the binding gives the CLI's code and JSON, byte for byte:
// decrypt one at a time, and the batch lanes.
package io.github.applepaydecryption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class SharedVectorTests {
    static List<Path> appleVectors() throws Exception {
        return TestInputs.folders(TestInputs.appleVectors());
    }

    static List<Path> googleVectors() throws Exception {
        return TestInputs.folders(TestInputs.googleVectors());
    }

    @Test
    void theSharedVectorsAreThere() throws Exception {
        assertTrue(appleVectors().size() >= 9, "Apple vectors: " + appleVectors());
        assertTrue(googleVectors().size() >= 9, "Google vectors: " + googleVectors());
    }

    /** The CLI's code: "ok" for exit 0, else the error object's. */
    private static String cliCode(TestInputs.CliRun run) {
        if (run.status == 0) return "ok";
        Object error = ((Map<?, ?>) Json.parse(run.stdout)).get("error");
        return String.valueOf(error);
    }

    private static void sameAsCli(Decryptor d, byte[] token, Instant at, List<String> cliArguments, String expect)
        throws Exception {
        TestInputs.CliRun cli = TestInputs.runCli(cliArguments);
        Result r = d.decrypt(token, at);
        assertEquals(cliCode(cli), r.code(), r.message());
        assertEquals(cli.stdout, r.json());
        if (expect != null) assertEquals(expect, r.code());
        // The batch lanes (one token, so no replay) give the same result.
        Result[] batch = d.decryptBatch(new byte[][] {token}, at, 1);
        assertEquals(r.code(), batch[0].code());
        assertEquals(r.json(), batch[0].json());
    }

    @ParameterizedTest
    @MethodSource("appleVectors")
    void anAppleVectorGivesTheCLIsCodeAndJSON(Path folder) throws Exception {
        Map<String, Object> meta = TestInputs.json(folder.resolve("meta.json"));
        String key = folder.resolve((String) meta.get("keyFile")).toString();
        String spec = meta.get("certFile") != null
            ? "cert=" + folder.resolve((String) meta.get("certFile")) + ",key=" + key
            : "id=" + meta.get("merchantIdentifier") + ",key=" + key;
        String signingTime = (String) meta.get("signingTime");
        List<String> arguments = List.of("decrypt", folder.resolve("token.json").toString(), "--merchant", spec,
            "--now", signingTime);
        try (Decryptor d = Decryptor.builder().merchant(spec).build()) {
            sameAsCli(d, TestInputs.read(folder.resolve("token.json")), Instant.parse(signingTime), arguments,
                (String) meta.get("expect"));
        }
    }

    @ParameterizedTest
    @MethodSource("googleVectors")
    void aGoogleVectorGivesTheCLIsCodeAndJSON(Path folder) throws Exception {
        Map<String, Object> meta = TestInputs.json(folder.resolve("meta.json"));
        Instant now = Instant.ofEpochMilli(Long.parseLong(meta.get("now").toString()));
        List<String> arguments = new ArrayList<>(List.of("decrypt", folder.resolve("token.json").toString(),
            "--google-root-keys", folder.resolve("root_keys.json").toString(),
            "--google-recipient-id", (String) meta.get("recipientId"), "--now", now.toString()));
        Decryptor.Builder builder = Decryptor.builder()
            .googleRootKeys(folder.resolve("root_keys.json"))
            .googleRecipientId((String) meta.get("recipientId"));
        for (Object file : (List<?>) meta.get("merchantKeyFiles")) {
            String path = folder.resolve((String) file).toString();
            arguments.add("--google-merchant-key");
            arguments.add(path);
            builder.googleMerchantKey(path);
        }
        try (Decryptor d = builder.build()) {
            sameAsCli(d, TestInputs.read(folder.resolve("token.json")), now, arguments, null);
        }
    }

    @Test
    void theBundledArchiveThroughTheBatchLanesGivesTheManifestsCodesInOrder() throws Exception {
        Map<String, Object> manifest = TestInputs.json(TestInputs.VECTORS.resolve("manifest.json"));
        Map<?, ?> archive = (Map<?, ?>) manifest.get("archive");
        List<byte[]> lines = new ArrayList<>();
        for (String line : new String(TestInputs.read(TestInputs.VECTORS.resolve((String) archive.get("file"))),
                java.nio.charset.StandardCharsets.UTF_8).split("\n")) {
            if (!line.trim().isEmpty()) lines.add(line.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        try (Decryptor d = TestInputs.vectorsDecryptor()) {
            for (int lanes : new int[] {1, 2, 0}) {
                Result[] results = d.decryptBatch(lines.toArray(new byte[0][]), TestInputs.VECTORS_NOW, lanes);
                List<String> codes = new ArrayList<>();
                for (Result r : results) codes.add(r.code());
                assertEquals(archive.get("expect"), codes, "lanes " + lanes);
            }
        }
    }
}
