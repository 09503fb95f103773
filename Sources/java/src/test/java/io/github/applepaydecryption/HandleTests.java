// A decryptor is freed exactly once (close, or the Cleaner for one never closed), and a closed one throws.
package io.github.applepaydecryption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import org.junit.jupiter.api.Test;

class HandleTests {
    private static final byte[] TOKEN = TestInputs.read(TestInputs.VECTORS.resolve("tokens/ec-3dsecure.json"));

    @Test
    void aClosedDecryptorThrowsInvalidHandleForEveryCall() {
        Decryptor d = TestInputs.vectorsDecryptor();
        assertFalse(d.isClosed());
        d.close();
        assertTrue(d.isClosed());
        d.close(); // a second close does nothing
        for (org.junit.jupiter.api.function.Executable call : new org.junit.jupiter.api.function.Executable[] {
            () -> d.decrypt(TOKEN, TestInputs.VECTORS_NOW), () -> d.decrypt(TOKEN), () -> d.decryptAtSigningTime(TOKEN),
            () -> d.decrypt(TOKEN, TestInputs.VECTORS_NOW, "{}"),
            () -> d.decryptBatch(new byte[][] {TOKEN}, TestInputs.VECTORS_NOW)}) {
            ApplePayException e = assertThrows(ApplePayException.class, call);
            assertEquals("invalidHandle", e.code());
            assertEquals(Codes.INVALID_HANDLE, e.numericCode());
        }
    }

    @Test
    void tryWithResourcesClosesAndResultsOutliveTheirDecryptor() {
        Result kept;
        Decryptor escaped;
        try (Decryptor d = TestInputs.vectorsDecryptor()) {
            kept = d.decrypt(TOKEN, TestInputs.VECTORS_NOW);
            escaped = d;
        }
        assertTrue(escaped.isClosed());
        // A Result is a value: nothing of it lives in the library.
        assertEquals("ok", kept.code());
        assertTrue(kept.payment().isPresent());
        assertTrue(kept.json().contains("applicationPrimaryAccountNumber"));
    }

    @Test
    void anUnreachableDecryptorIsFreedByTheCleaner() throws Exception {
        WeakReference<Decryptor> ref = new WeakReference<>(TestInputs.vectorsDecryptor());
        for (int i = 0; i < 50 && ref.get() != null; i++) {
            System.gc();
            Thread.sleep(20);
        }
        assertTrue(ref.get() == null, "the decryptor was not collected");
        // Many decryptors made and dropped: the Cleaner frees each once (a double free would be invalidHandle
        // inside the Cleaner's thread, a crash never), and new ones keep working.
        for (int i = 0; i < 20; i++) TestInputs.vectorsDecryptor();
        System.gc();
        try (Decryptor d = TestInputs.vectorsDecryptor()) {
            assertEquals("ok", d.decrypt(TOKEN, TestInputs.VECTORS_NOW).code());
        }
    }
}
