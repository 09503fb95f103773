// The tests' inputs: the checkout, the shared vectors, the minted Google Pay tokens and the CLI, from the
// environment Tests/JVM/run-tests.sh sets (the CLI and the vectors are required: a missing one fails).
package io.github.applepaydecryption;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

final class TestInputs {
    private TestInputs() {}

    /** The checkout's root (surefire runs in Sources/java). */
    static final Path ROOT = Paths.get("").toAbsolutePath().getParent().getParent();
    static final Path VECTORS = ROOT.resolve("Vectors");
    static final Instant VECTORS_NOW = Instant.parse("2026-03-01T12:01:00Z");
    /** mint-tokens google's clock: 2026-03-01T12:00:00Z; its messages expire an hour later. */
    static final Instant GOOGLE_NOW = Instant.parse("2026-03-01T12:00:00Z");
    static final String GOOGLE_RECIPIENT = "merchant:12345678901234567890";
    /** mint-tokens samsung's clock: every token's utc is 2026-03-01T12:00:00.000Z. */
    static final Instant SAMSUNG_NOW = Instant.parse("2026-03-01T12:00:00Z");

    static Path env(String name, Path fallback) {
        String value = System.getenv(name);
        Path path = value != null && !value.isEmpty() ? Paths.get(value) : fallback;
        assertTrue(path != null && Files.exists(path), "set " + name + " (Tests/JVM/run-tests.sh does): " + path);
        return path;
    }

    static Path appleVectors() {
        return env("APPLEPAY_SHARED_VECTORS", ROOT.resolveSibling("shared").resolve("vectors/apple"));
    }

    static Path googleVectors() {
        return env("APPLEPAY_GOOGLE_VECTORS", ROOT.resolveSibling("shared").resolve("vectors/google"));
    }

    static Path googleMinted() {
        return env("APPLEPAY_GOOGLE_MINTED", null);
    }

    static Path samsungVectors() {
        return env("APPLEPAY_SAMSUNG_VECTORS", ROOT.resolveSibling("shared").resolve("vectors/samsung"));
    }

    /** A `mint-tokens samsung` folder (Tests/JVM/run-tests.sh mints one). */
    static Path samsungMinted() {
        return env("APPLEPAY_SAMSUNG_MINTED", null);
    }

    static Path cli() {
        return env("APPLEPAY_CLI", null);
    }

    static List<Path> folders(Path parent) throws IOException {
        try (Stream<Path> list = Files.list(parent)) {
            return list.filter(p -> Files.exists(p.resolve("token.json"))).sorted().collect(Collectors.toList());
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> json(Path file) throws IOException {
        return (Map<String, Object>) Json.parse(new String(Files.readAllBytes(file), StandardCharsets.UTF_8));
    }

    static byte[] read(Path file) {
        try {
            return Files.readAllBytes(file);
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    /** The bundled Vectors/ decryptor: both merchants and the test root, as the README's main job. */
    static Decryptor vectorsDecryptor() {
        return Decryptor.builder()
            .merchant("cert=" + VECTORS.resolve("merchants/ec.cert.pem") + ",key=" + VECTORS.resolve("merchants/ec.key.pem"))
            .merchant("cert=" + VECTORS.resolve("merchants/rsa.cert.pem") + ",key=" + VECTORS.resolve("merchants/rsa.key.pem"))
            .insecureTestRoot(VECTORS.resolve("trust/test-root.pem"))
            .build();
    }

    /** A decryptor of `mint-tokens google`'s keys (and the Vectors merchants, for mixed batches). */
    static Decryptor googleDecryptor(String recipientId) {
        Path minted = googleMinted();
        return Decryptor.builder()
            .merchant("cert=" + VECTORS.resolve("merchants/ec.cert.pem") + ",key=" + VECTORS.resolve("merchants/ec.key.pem"))
            .insecureTestRoot(VECTORS.resolve("trust/test-root.pem"))
            .googleRootKeys(minted.resolve("root_keys.json"))
            .googleRecipientId("gateway:someone-else")
            .googleRecipientId(recipientId)
            .googleMerchantKey(minted.resolve("merchant_key.pem").toString())
            .build();
    }

    static List<byte[]> googleTokens() {
        List<byte[]> tokens = new ArrayList<>();
        for (String line : new String(read(googleMinted().resolve("tokens.jsonl")), StandardCharsets.UTF_8).split("\n")) {
            if (!line.isEmpty()) tokens.add(line.getBytes(StandardCharsets.UTF_8));
        }
        return tokens;
    }

    /** What the CLI's decrypt printed (stdout without its newline) and its exit status. */
    static final class CliRun {
        final String stdout;
        final int status;

        CliRun(String stdout, int status) {
            this.stdout = stdout;
            this.status = status;
        }
    }

    static CliRun runCli(List<String> arguments) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(cli().toString());
        command.addAll(arguments);
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (InputStream in = process.getInputStream()) {
            in.transferTo(out);
        }
        int status = process.waitFor();
        String text = out.toString(StandardCharsets.UTF_8);
        return new CliRun(text.endsWith("\n") ? text.substring(0, text.length() - 1) : text, status);
    }
}
