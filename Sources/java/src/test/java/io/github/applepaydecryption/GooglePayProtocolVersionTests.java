// Google Pay protocol versions through the binding (issue 44): ECv1 and ECv2 unless googleProtocolVersion names
// others, ECv2SigningOnly only when named, and every payment says its protocolVersion and the recipient id that
// verified it.
package io.github.applepaydecryption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class GooglePayProtocolVersionTests {
    /** The line of `mint-tokens google`'s cases.jsonl whose cases.json name is `name`. */
    static byte[] minted(String name) {
        Path minted = TestInputs.googleMinted();
        List<?> cases = (List<?>) Json.parse(new String(TestInputs.read(minted.resolve("cases.json")), StandardCharsets.UTF_8));
        String[] lines = new String(TestInputs.read(minted.resolve("cases.jsonl")), StandardCharsets.UTF_8).split("\n");
        for (int i = 0; i < cases.size(); i++) {
            if (name.equals(((Map<?, ?>) cases.get(i)).get("name"))) return lines[i].getBytes(StandardCharsets.UTF_8);
        }
        throw new AssertionError("no case " + name);
    }

    static Decryptor decryptor(String... versions) {
        Path minted = TestInputs.googleMinted();
        Decryptor.Builder builder = Decryptor.builder().googleRootKeys(minted.resolve("root_keys.json"))
            .googleRecipientId(TestInputs.GOOGLE_RECIPIENT)
            .googleMerchantKey(minted.resolve("merchant_key.pem").toString());
        return (versions.length == 0 ? builder : builder.googleProtocolVersion(versions)).build();
    }

    @Test
    void byDefaultECv1AndECv2AreAcceptedAndSigningOnlyIsRefused() {
        try (Decryptor d = decryptor()) {
            Result ecv1 = d.decrypt(minted("ecv1"), TestInputs.GOOGLE_NOW);
            assertEquals("ok", ecv1.code(), ecv1.message());
            assertTrue(ecv1.json().startsWith("{\"protocolVersion\":\"ECv1\",\"recipientId\":\""
                + TestInputs.GOOGLE_RECIPIENT + "\","), ecv1.json());
            Result signingOnly = d.decrypt(minted("ecv2-signing-only"), TestInputs.GOOGLE_NOW);
            assertEquals("unsupportedVersion", signingOnly.code());
            assertEquals("protocolVersion", signingOnly.field());
        }
    }

    @Test
    void namedVersionsReplaceTheDefault() {
        try (Decryptor d = decryptor("ECv2SigningOnly")) {
            Result signingOnly = d.decrypt(minted("ecv2-signing-only"), TestInputs.GOOGLE_NOW);
            assertEquals("ok", signingOnly.code(), signingOnly.message());
            assertTrue(signingOnly.json().startsWith("{\"protocolVersion\":\"ECv2SigningOnly\","), signingOnly.json());
            assertEquals("unsupportedVersion", d.decrypt(minted("ecv2"), TestInputs.GOOGLE_NOW).code());
        }
        assertEquals("invalidConfiguration", assertThrows(ApplePayException.class, () -> decryptor("ECv3")).code());
    }

    /** The attack review of issue 44 item 3: a call naming no version read as the default, and a name with a NUL
     * as the name cut short there (ECv2SigningOnly accepted); both are refused now. */
    @Test
    void noVersionAndANameWithANulAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> Decryptor.builder().googleProtocolVersion());
        assertEquals("invalidConfiguration",
            assertThrows(ApplePayException.class, () -> decryptor("ECv2SigningOnly\0off")).code());
    }
}
