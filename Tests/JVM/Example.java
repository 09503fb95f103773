// The JVM article's example: a bundled test token decrypted through the linux-x86_64 jar, from the checkout's
// root: java -cp applepay-VERSION-linux-x86_64.jar Tests/JVM/Example.java
import io.github.applepaydecryption.ApplePayException;
import io.github.applepaydecryption.Decryptor;
import io.github.applepaydecryption.Result;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;

public class Example {
    public static void main(String[] args) throws Exception {
        byte[] token = Files.readAllBytes(Path.of("Vectors/tokens/ec-3dsecure.json"));
        try (Decryptor d = Decryptor.builder()
                .merchant("cert=Vectors/merchants/ec.cert.pem,key=Vectors/merchants/ec.key.pem")
                .insecureTestRoot(Path.of("Vectors/trust/test-root.pem")) // test tokens: never in production
                .window(Duration.ofSeconds(300))
                .build()) {
            Result r = d.decrypt(token, Instant.parse("2026-03-01T12:01:00Z")); // a rejected token is a code, not an exception
            System.out.println(r.code() + " " + r.transactionId());
            System.out.println(r); // the card number masked
            Result[] all = d.decryptBatch(new byte[][] {token, token}, Instant.parse("2026-03-01T12:01:00Z"));
            System.out.println(all[0].code() + ", then " + all[1].code()); // ok, then replayedTransaction
        }
        try {
            Decryptor.builder().merchant("cert=missing.pem,key=missing.pem").build();
        } catch (ApplePayException e) {
            System.out.println(e.code()); // invalidConfiguration, with the reason in the message
        }
    }
}
