// A separate JVM's view of the loader (LoaderTests runs it): prints where the native code came from and
// decrypts a bundled token, or prints the refusal's code and message and exits 3.
package io.github.applepaydecryption;

import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Instant;

public final class LoaderProbe {
    private LoaderProbe() {}

    public static void main(String[] args) throws Exception {
        try {
            System.out.println("origin " + Decryptor.nativeOrigin());
            try (Decryptor d = Decryptor.builder()
                    .merchant("cert=" + args[0] + "/merchants/ec.cert.pem,key=" + args[0] + "/merchants/ec.key.pem")
                    .insecureTestRoot(Paths.get(args[0], "trust/test-root.pem")).build()) {
                Result r = d.decrypt(Files.readAllBytes(Paths.get(args[0], "tokens/ec-3dsecure.json")),
                    Instant.parse("2026-03-01T12:01:00Z"));
                System.out.println("code " + r.code());
            }
        } catch (ApplePayException e) {
            System.out.println("refused " + e.code() + ": " + e.getMessage());
            System.exit(3);
        }
    }
}
