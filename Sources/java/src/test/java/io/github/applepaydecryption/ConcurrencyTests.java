// One decryptor shared by many threads gives each thread the results one thread gets; a close racing the
// calls ends them with invalidHandle, never a crash.
package io.github.applepaydecryption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class ConcurrencyTests {
    private static final int THREADS = 8;

    @Test
    void manyThreadsOnOneDecryptorGetTheSingleThreadedResults() throws Exception {
        List<byte[]> tokens = TestInputs.googleTokens().subList(0, 40);
        byte[] apple = TestInputs.read(TestInputs.VECTORS.resolve("tokens/ec-3dsecure.json"));
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try (Decryptor d = TestInputs.googleDecryptor(TestInputs.GOOGLE_RECIPIENT)) {
            List<String> expected = new ArrayList<>();
            for (byte[] token : tokens) expected.add(d.decrypt(token, TestInputs.GOOGLE_NOW).json());
            String appleExpected = d.decrypt(apple, TestInputs.VECTORS_NOW).json();
            List<Future<Integer>> done = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                final int offset = t;
                done.add(pool.submit(() -> {
                    int checked = 0;
                    for (int round = 0; round < 3; round++) {
                        for (int i = 0; i < tokens.size(); i++) {
                            int k = (i + offset * 5) % tokens.size();
                            assertEquals(expected.get(k), d.decrypt(tokens.get(k), TestInputs.GOOGLE_NOW).json());
                            checked++;
                        }
                        assertEquals(appleExpected, d.decrypt(apple, TestInputs.VECTORS_NOW).json());
                        // Batches from several threads at once: each call has its own replay ledger.
                        Result[] batch = d.decryptBatch(tokens.subList(0, 8).toArray(new byte[0][]),
                            TestInputs.GOOGLE_NOW, 2);
                        for (int i = 0; i < batch.length; i++) assertEquals(expected.get(i), batch[i].json());
                    }
                    return checked;
                }));
            }
            int total = 0;
            for (Future<Integer> f : done) total += f.get();
            assertEquals(THREADS * 3 * tokens.size(), total);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aCloseRacingManyCallsEndsThemWithInvalidHandle() throws Exception {
        byte[] token = TestInputs.read(TestInputs.VECTORS.resolve("tokens/ec-3dsecure.json"));
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try {
            for (int round = 0; round < 5; round++) {
                Decryptor d = TestInputs.vectorsDecryptor();
                AtomicInteger ok = new AtomicInteger(), closed = new AtomicInteger();
                List<Future<?>> done = new ArrayList<>();
                for (int t = 0; t < THREADS; t++) {
                    done.add(pool.submit(() -> {
                        for (int i = 0; i < 50; i++) {
                            try {
                                assertEquals("ok", d.decrypt(token, TestInputs.VECTORS_NOW).code());
                                ok.incrementAndGet();
                            } catch (ApplePayException e) {
                                assertEquals("invalidHandle", e.code());
                                closed.incrementAndGet();
                            }
                        }
                        return null;
                    }));
                }
                Thread.sleep(5 * round);
                d.close();
                for (Future<?> f : done) f.get();
                assertEquals(THREADS * 50, ok.get() + closed.get());
                assertTrue(d.isClosed());
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
