// The Java side of Benchmarks/jvm/run.sh: the binding on the tokens of a `mint-tokens` folder, as bench.c
// does from C: decrypt one token at a time (the Result's JSON read), decryptBatch over all of them, and a token
// rejected at once ("{}": the per-call floor). Prints "java MODE TOKENS WALL_SECONDS CPU_SECONDS" lines (CPU:
// the thread's for the single-token loops, the process's, JIT and GC threads included, for the batch).
// java -cp applepay-VERSION-linux-x86_64.jar Benchmarks/jvm/Bench.java MINTED_DIR ROUNDS LANES
import io.github.applepaydecryption.Decryptor;
import io.github.applepaydecryption.Result;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

public class Bench {
    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int rounds = Integer.parseInt(args[1]), lanes = Integer.parseInt(args[2]);
        List<byte[]> list = new ArrayList<>();
        for (String line : Files.readString(dir.resolve("tokens.jsonl")).split("\n")) {
            if (!line.isBlank()) list.add(line.strip().getBytes(StandardCharsets.UTF_8));
        }
        byte[][] tokens = list.toArray(new byte[0][]);
        byte[] floorToken = "{}".getBytes(StandardCharsets.UTF_8);
        try (Decryptor d = Decryptor.builder()
                .merchant("cert=" + dir.resolve("merchant.cert.pem") + ",key=" + dir.resolve("merchant.key.pem"))
                .insecureTestRoot(dir.resolve("insecure-test-root.pem")).build()) {
            ThreadMXBean threads = ManagementFactory.getThreadMXBean();
            com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
            long sink = 0;
            for (int round = -2; round < rounds; round++) { // two rounds warm the JIT up
                long start = System.nanoTime(), cpu = threads.getCurrentThreadCpuTime();
                for (byte[] token : tokens) {
                    Result r = d.decryptAtSigningTime(token);
                    if (!r.isOk()) throw new AssertionError(r.toString());
                    sink += r.json().length();
                }
                double single = (System.nanoTime() - start) / 1e9;
                double singleCpu = (threads.getCurrentThreadCpuTime() - cpu) / 1e9;
                start = System.nanoTime();
                cpu = os.getProcessCpuTime();
                Result[] all = d.decryptBatchAtSigningTime(tokens, lanes);
                for (Result r : all) {
                    if (!r.isOk()) throw new AssertionError(r.toString());
                }
                double batch = (System.nanoTime() - start) / 1e9, batchCpu = (os.getProcessCpuTime() - cpu) / 1e9;
                int floorCalls = 20 * tokens.length;
                start = System.nanoTime();
                cpu = threads.getCurrentThreadCpuTime();
                for (int i = 0; i < floorCalls; i++) sink += d.decryptAtSigningTime(floorToken).numericCode();
                double floor = (System.nanoTime() - start) / 1e9;
                double floorCpu = (threads.getCurrentThreadCpuTime() - cpu) / 1e9;
                if (round >= 0) {
                    System.out.printf("java single %d %.6f %.6f%njava batch %d %.6f %.6f%njava floor %d %.6f %.6f%n",
                        tokens.length, single, singleCpu, tokens.length, batch, batchCpu, floorCalls, floor, floorCpu);
                }
            }
            if (sink == 42) System.out.println();
        }
    }
}
