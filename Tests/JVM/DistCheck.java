// .ci/dist-check's JVM program, run where no Swift toolchain exists with only applepay-VERSION-linux-x86_64.jar
// on the class path: every shared Apple and Google vector decrypted through the jar gives the packaged CLI's
// code and JSON, byte for byte; the bundled tokens give the manifest's codes, the archive through the batch lanes.
// java -cp applepay-VERSION-linux-x86_64.jar Tests/JVM/DistCheck.java APPLE_VECTORS GOOGLE_VECTORS CLI VECTORS
import io.github.applepaydecryption.Decryptor;
import io.github.applepaydecryption.Result;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

public class DistCheck {
    static String cli;
    static int checked;

    /** A string or number member of a flat meta.json (these files are flat where read here). */
    static String member(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\"\\s*:\\s*(\"((?:[^\"\\\\]|\\\\.)*)\"|(-?[0-9]+)|null)").matcher(json);
        if (!m.find()) return null;
        return m.group(2) != null ? m.group(2) : m.group(3);
    }

    static List<Path> folders(Path parent) throws Exception {
        try (Stream<Path> list = Files.list(parent)) {
            return list.filter(p -> Files.exists(p.resolve("token.json"))).sorted().collect(Collectors.toList());
        }
    }

    static String[] runCli(List<String> arguments) throws Exception {
        List<String> command = new ArrayList<>(List.of(cli));
        command.addAll(arguments);
        Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (InputStream in = p.getInputStream()) {
            in.transferTo(out);
        }
        int status = p.waitFor();
        String text = out.toString(StandardCharsets.UTF_8).replaceAll("\n$", "");
        String code = status == 0 ? "ok" : member(text, "error");
        return new String[] {code, text};
    }

    static void same(String name, Decryptor d, Path token, Instant at, List<String> arguments) throws Exception {
        String[] expected = runCli(arguments);
        Result r = d.decrypt(Files.readAllBytes(token), at);
        if (!expected[0].equals(r.code()) || !expected[1].equals(r.json())) {
            throw new AssertionError(name + ": the jar gave " + r.code() + " " + r.json() + ", the CLI " + expected[0]
                + " " + expected[1]);
        }
        checked++;
        System.out.println(name + " " + r.code());
    }

    public static void main(String[] args) throws Exception {
        Path apple = Path.of(args[0]), google = Path.of(args[1]), vectors = Path.of(args[3]);
        cli = args[2];
        System.out.println("native code from " + Decryptor.nativeOrigin() + ", ABI " + Decryptor.abiVersion());
        for (Path folder : folders(apple)) {
            String meta = Files.readString(folder.resolve("meta.json"));
            String key = folder.resolve(member(meta, "keyFile")).toString();
            String cert = member(meta, "certFile");
            String spec = cert != null ? "cert=" + folder.resolve(cert) + ",key=" + key
                : "id=" + member(meta, "merchantIdentifier") + ",key=" + key;
            String signingTime = member(meta, "signingTime");
            try (Decryptor d = Decryptor.builder().merchant(spec).build()) {
                same("apple/" + folder.getFileName(), d, folder.resolve("token.json"), Instant.parse(signingTime),
                    List.of("decrypt", folder.resolve("token.json").toString(), "--merchant", spec, "--now", signingTime));
            }
        }
        for (Path folder : folders(google)) {
            String meta = Files.readString(folder.resolve("meta.json"));
            Instant now = Instant.ofEpochMilli(Long.parseLong(member(meta, "now")));
            List<String> arguments = new ArrayList<>(List.of("decrypt", folder.resolve("token.json").toString(),
                "--google-root-keys", folder.resolve("root_keys.json").toString(),
                "--google-recipient-id", member(meta, "recipientId"), "--now", now.toString()));
            Decryptor.Builder builder = Decryptor.builder().googleRootKeys(folder.resolve("root_keys.json"))
                .googleRecipientId(member(meta, "recipientId"));
            try (Stream<Path> keys = Files.list(folder)) {
                for (Path key : keys.filter(p -> p.getFileName().toString().startsWith("merchant_key")).sorted()
                        .collect(Collectors.toList())) {
                    arguments.add("--google-merchant-key");
                    arguments.add(key.toString());
                    builder.googleMerchantKey(key.toString());
                }
            }
            try (Decryptor d = builder.build()) {
                same("google/" + folder.getFileName(), d, folder.resolve("token.json"), now, arguments);
            }
        }
        if (checked < 18) throw new AssertionError("only " + checked + " shared vectors (expected 9 Apple and 9 Google)");
        // The bundled archive through the batch lanes: the manifest's codes, in order.
        String manifest = Files.readString(vectors.resolve("manifest.json"));
        Matcher expect = Pattern.compile("\"expect\"\\s*:\\s*\\[([^\\]]*)\\]").matcher(manifest);
        if (!expect.find()) throw new AssertionError("no archive expectations in the manifest");
        List<String> want = new ArrayList<>();
        for (String code : expect.group(1).split(",")) want.add(code.trim().replace("\"", ""));
        List<byte[]> lines = new ArrayList<>();
        for (String line : Files.readString(vectors.resolve("archive.jsonl")).split("\n")) {
            if (!line.isBlank()) lines.add(line.getBytes(StandardCharsets.UTF_8));
        }
        try (Decryptor d = Decryptor.builder()
                .merchant("cert=" + vectors.resolve("merchants/ec.cert.pem") + ",key=" + vectors.resolve("merchants/ec.key.pem"))
                .merchant("cert=" + vectors.resolve("merchants/rsa.cert.pem") + ",key=" + vectors.resolve("merchants/rsa.key.pem"))
                .insecureTestRoot(vectors.resolve("trust/test-root.pem")).build()) {
            List<String> got = new ArrayList<>();
            for (Result r : d.decryptBatch(lines.toArray(new byte[0][]), Instant.parse("2026-03-01T12:01:00Z"), 2)) {
                got.add(r.code());
            }
            if (!got.equals(want)) throw new AssertionError("archive: " + got + ", the manifest says " + want);
        }
        System.out.println(checked + " shared vectors as the CLI decrypts them, and the " + lines.size()
            + "-token archive (2 lanes) as the manifest expects");
    }
}
