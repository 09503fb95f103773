import io.github.applepaydecryption.Decryptor;
import io.github.applepaydecryption.Result;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import scala.Tuple2;

/**
 * The smallest Spark job whose executors call the engine through the JNI binding (issue 42 item 5, a
 * benchmark, not a product): reads a JSONL archive into PARTITIONS partitions, numbers its lines
 * (zipWithIndex), decrypts each partition in batches of BATCH tokens with one Decryptor per executor JVM
 * (decryptBatch, one lane a task: Spark runs one task per core, as the Python job does) and writes one result
 * line per token: for a token that decrypts the CLI's line ({"index":N,"source":"PATH:N+1","transactionId":…,
 * "payment":…}), else {"index":N,"source":"PATH:N+1", then the engine's error JSON. What it does NOT do, unlike
 * applepay.spark: judge replays across batches and partitions (each batch has its own ledger), handle
 * envelopes' or oversized items' CLI-specific lines, or promise byte-identical output to the CLI.
 *
 * Usage: JniJob TOKENS.jsonl OUT MERCHANT_SPEC TRUST_ROOT NOW PARTITIONS BATCH
 */
public final class JniJob {
    private JniJob() {}

    /** One Decryptor per executor JVM, made on first use and shared by its tasks (it is thread-safe). */
    private static final class Engine {
        private static Decryptor decryptor;

        static synchronized Decryptor get(String merchant, String root) {
            if (decryptor == null) {
                decryptor = Decryptor.builder().merchant(merchant).insecureTestRoot(Path.of(root)).build();
            }
            return decryptor;
        }
    }

    public static void main(String[] args) {
        String input = args[0], out = args[1], merchant = args[2], root = args[3];
        long now = Instant.parse(args[4]).toEpochMilli();
        int partitions = Integer.parseInt(args[5]), batch = Integer.parseInt(args[6]);
        String source = Path.of(input).toAbsolutePath().toString().replace("\\", "\\\\").replace("\"", "\\\"");
        try (JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("applepay-jni"))) {
            long started = System.nanoTime();
            org.apache.spark.util.LongAccumulator decrypted = sc.sc().longAccumulator("decrypted");
            sc.textFile(input, partitions).zipWithIndex().mapPartitions((Iterator<Tuple2<String, Long>> lines) -> {
                Decryptor decryptor = Engine.get(merchant, root);
                Instant at = Instant.ofEpochMilli(now);
                List<String> written = new ArrayList<>();
                List<byte[]> tokens = new ArrayList<>(batch);
                List<Long> indexes = new ArrayList<>(batch);
                while (lines.hasNext()) {
                    Tuple2<String, Long> line = lines.next();
                    tokens.add(line._1().getBytes(StandardCharsets.UTF_8));
                    indexes.add(line._2());
                    if (tokens.size() == batch || !lines.hasNext()) {
                        Result[] results = decryptor.decryptBatch(tokens.toArray(new byte[0][]), at, 1);
                        for (int k = 0; k < results.length; k++) {
                            long index = indexes.get(k);
                            String head = "{\"index\":" + index + ",\"source\":\"" + source + ":" + (index + 1) + "\",";
                            Result r = results[k];
                            written.add(r.isOk()
                                    ? head + "\"transactionId\":\"" + r.transactionId() + "\",\"payment\":" + r.json() + "}"
                                    : head + r.json().substring(1));
                        }
                        decrypted.add(results.length);
                        tokens.clear();
                        indexes.clear();
                    }
                }
                return written.iterator();
            }).saveAsTextFile(out);
            System.err.println("JniJob: " + decrypted.value() + " tokens in " + (System.nanoTime() - started) / 1e9 + " s (jobs only)");
        }
    }
}
