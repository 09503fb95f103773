// The native loader: the linux-x86_64 jar's code extracted into a private directory and deleted, the
// fallbacks, and its refusals (a library of another ABI version, an extraction directory others can write).
package io.github.applepaydecryption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LoaderTests {
    private static final Path NATIVE = Paths.get("target/native").toAbsolutePath();

    private static Path wrongAbiLibrary() {
        return TestInputs.env("APPLEPAY_WRONG_ABI_LIBRARY", null);
    }

    private static void mode(Path path, String permissions, boolean sticky) throws Exception {
        Files.setPosixFilePermissions(path, PosixFilePermissions.fromString(permissions));
        if (sticky) {
            Process chmod = new ProcessBuilder("chmod", "+t", path.toString()).inheritIO().start();
            assertEquals(0, chmod.waitFor());
        }
    }

    @Test
    void aLibraryOfAnotherABIVersionIsRefusedNamingBoth() {
        Decryptor.abiVersion(); // the real one is loaded; the refused one is never bound
        ApplePayException e = assertThrows(ApplePayException.class, () -> NativeLoader.bind(wrongAbiLibrary()));
        assertEquals("libraryUnavailable", e.code());
        assertTrue(e.getMessage().contains("has ABI version 5, these classes need 6"), e.getMessage());
        try (Decryptor d = TestInputs.vectorsDecryptor()) {
            assertEquals("ok", d.decrypt(TestInputs.read(TestInputs.VECTORS.resolve("tokens/ec-3dsecure.json")),
                TestInputs.VECTORS_NOW).code());
        }
    }

    @Test
    void anExtractionDirectoryOthersCanWriteIsRefused(@TempDir Path temp) throws Exception {
        Path open = Files.createDirectory(temp.resolve("open"));
        mode(open, "rwxrwxrwx", false);
        ApplePayException e = assertThrows(ApplePayException.class, () -> NativeLoader.privateDirectory(open));
        assertTrue(e.getMessage().contains("writable by others"), e.getMessage());
        Path group = Files.createDirectory(temp.resolve("group"));
        mode(group, "rwxrwx---", false);
        assertThrows(ApplePayException.class, () -> NativeLoader.privateDirectory(group));
        // With the sticky bit (as /tmp), others cannot remove or rename what we make in it.
        Path sticky = Files.createDirectory(temp.resolve("sticky"));
        mode(sticky, "rwxrwxrwx", true);
        Path made = NativeLoader.privateDirectory(sticky);
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(made)));
        assertTrue(made.getFileName().toString().startsWith("applepay-"));
        Files.delete(made);
        assertThrows(ApplePayException.class, () -> NativeLoader.privateDirectory(temp.resolve("missing")));
    }

    /** A linux-x86_64 jar as the build makes it: the classes and target/native under META-INF/native/linux-x86_64/. */
    private static Path classifierJar(Path temp) throws IOException {
        Path jar = temp.resolve("applepay-linux-x86_64.jar");
        try (OutputStream file = Files.newOutputStream(jar); JarOutputStream out = new JarOutputStream(file)) {
            Path classes = Paths.get("target/classes");
            List<Path> files = new ArrayList<>();
            try (Stream<Path> walk = Files.walk(classes)) {
                walk.filter(Files::isRegularFile).forEach(files::add);
            }
            for (Path f : files) add(out, classes.relativize(f).toString(), f);
            try (Stream<Path> list = Files.list(NATIVE)) {
                for (Path f : (Iterable<Path>) list::iterator) {
                    add(out, NativeLoader.RESOURCES + f.getFileName(), f);
                }
            }
        }
        return jar;
    }

    private static void add(JarOutputStream out, String name, Path file) throws IOException {
        out.putNextEntry(new JarEntry(name));
        Files.copy(file, out);
        out.closeEntry();
    }

    private static String probe(Path jar, int expectedStatus, String... properties) throws Exception {
        List<String> command = new ArrayList<>(List.of(Paths.get(System.getProperty("java.home"), "bin", "java").toString()));
        command.addAll(List.of(properties));
        command.addAll(List.of("-cp", jar + ":" + Paths.get("target/test-classes").toAbsolutePath(),
            "io.github.applepaydecryption.LoaderProbe", TestInputs.VECTORS.toString()));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (InputStream in = process.getInputStream()) {
            in.transferTo(out);
        }
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(expectedStatus, process.waitFor(), text);
        return text;
    }

    @Test
    void theClassifierJarLoadsFromAPrivateDirectoryItLeavesNothingIn(@TempDir Path temp) throws Exception {
        Path jar = classifierJar(temp);
        Path tmp = Files.createDirectory(temp.resolve("tmp"));
        mode(tmp, "rwx------", false);
        String out = probe(jar, 0, "-Djava.io.tmpdir=" + tmp);
        assertTrue(out.contains("origin the jar (linux-x86_64)") && out.contains("code ok"), out);
        try (Stream<Path> left = Files.list(tmp)) {
            assertEquals(0, left.count(), "the extracted files are deleted once loaded");
        }
        // -Dapplepay.library overrides the jar's libapplepay; one of another ABI version is refused.
        String refused = probe(jar, 3, "-Djava.io.tmpdir=" + tmp, "-Dapplepay.library=" + wrongAbiLibrary());
        assertTrue(refused.contains("refused libraryUnavailable") && refused.contains("has ABI version 5"), refused);
        // An extraction directory others can write is refused before anything is written.
        Path open = Files.createDirectory(temp.resolve("open"));
        mode(open, "rwxrwxrwx", false);
        String writable = probe(jar, 3, "-Dapplepay.tmpdir=" + open);
        assertTrue(writable.contains("writable by others"), writable);
        try (Stream<Path> left = Files.list(open)) {
            assertEquals(0, left.count());
        }
    }

    @Test
    void withoutTheJarsCodeTheLibraryComesFromThePropertyAndTheShimFromTheLibraryPath() throws Exception {
        // This JVM: target/classes (no native code) with -Dapplepay.library and java.library.path (pom.xml).
        assertTrue(Decryptor.nativeOrigin().endsWith("libapplepay.so"), Decryptor.nativeOrigin());
        Path classesOnly = Paths.get("target/classes").toAbsolutePath();
        String none = probe(classesOnly, 3);
        assertTrue(none.contains("no native library"), none);
        String fromPath = probe(classesOnly, 0, "-Djava.library.path=" + NATIVE);
        assertTrue(fromPath.contains("origin " + NATIVE.resolve(NativeLoader.LIBRARY)) && fromPath.contains("code ok"),
            fromPath);
    }
}
