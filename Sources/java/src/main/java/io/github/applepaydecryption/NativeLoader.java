// Finds and loads the JNI shim and libapplepay: from the classifier jar (extracted into a private
// directory and deleted once loaded), else -Dapplepay.library=PATH, else java.library.path.
package io.github.applepaydecryption;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * Loads the native code once per class loader. The classifier jar ({@code applepay-VERSION-linux-x86_64.jar})
 * carries {@code libapplepay.so.N} and {@code libapplepay_jni.so} under {@code META-INF/native/linux-x86_64/}
 * (N is the ABI version); they are copied into a directory made for this process alone (mode 0700, under
 * {@code -Dapplepay.tmpdir}, else {@code java.io.tmpdir}, which must not be writable by others unless it has
 * the sticky bit), loaded, and deleted. {@code -Dapplepay.library=PATH} names libapplepay instead (the release
 * tarball's {@code lib/libapplepay.so.N}); the shim then comes from the jar, from beside PATH, or from
 * {@code java.library.path}, which is also where both are looked for when neither is given.
 */
final class NativeLoader {
    private NativeLoader() {}

    static final String PLATFORM = "linux-x86_64";
    static final String RESOURCES = "META-INF/native/" + PLATFORM + "/";
    static final String SHIM = "libapplepay_jni.so";
    static final String LIBRARY = "libapplepay.so." + Native.ABI_VERSION;

    private static boolean loaded;
    private static ApplePayException failure;
    private static String origin = "";

    /** Loads the native code, or throws (the same exception again on every later call) why it cannot. */
    static synchronized void ensureLoaded() {
        if (loaded) return;
        if (failure != null) throw failure;
        try {
            origin = load();
            loaded = true;
        } catch (ApplePayException e) {
            failure = e;
            throw e;
        } catch (IOException | UnsatisfiedLinkError | SecurityException e) {
            failure = unavailable(e.getMessage() == null ? e.toString() : e.getMessage());
            throw failure;
        }
    }

    /** Where the native code was loaded from (for diagnostics). */
    static synchronized String origin() {
        return origin;
    }

    private static String load() throws IOException {
        String configured = System.getProperty("applepay.library");
        if (configured != null && configured.isEmpty()) configured = null;
        URL shimResource = NativeLoader.class.getClassLoader().getResource(RESOURCES + SHIM);
        URL libraryResource = NativeLoader.class.getClassLoader().getResource(RESOURCES + LIBRARY);
        if (shimResource != null && (configured != null || libraryResource != null)) {
            Path directory = privateDirectory(extractionParent());
            List<Path> written = new ArrayList<>();
            try {
                Path shim = extract(shimResource, directory.resolve(SHIM), written);
                Path library = configured != null ? Paths.get(configured)
                    : extract(libraryResource, directory.resolve(LIBRARY), written);
                try {
                    loadShim(shim);
                    bind(library);
                } catch (UnsatisfiedLinkError e) {
                    throw unavailable(e.getMessage() + " (is " + directory.getParent()
                        + " mounted noexec? set -Dapplepay.tmpdir to a directory that is not)");
                }
                return configured != null ? configured + " (shim from the jar)" : "the jar (" + PLATFORM + ")";
            } finally {
                // Loaded objects stay mapped: the files are not needed any more, and nothing is left behind.
                for (Path path : written) Files.deleteIfExists(path);
                Files.deleteIfExists(directory);
            }
        }
        Path library = configured != null ? Paths.get(configured) : onLibraryPath(LIBRARY, "libapplepay.so");
        if (library == null) {
            throw unavailable("no native library: use applepay-VERSION-" + PLATFORM + ".jar, or set -Dapplepay.library="
                + "PATH to libapplepay.so." + Native.ABI_VERSION + " (the release tarball's lib/), or put "
                + LIBRARY + " and " + SHIM + " on java.library.path");
        }
        Path beside = library.toAbsolutePath().resolveSibling(SHIM);
        Path shim = Files.isRegularFile(beside) ? beside : onLibraryPath(SHIM);
        if (shim == null) {
            throw unavailable(SHIM + " not found beside " + library + " nor on java.library.path");
        }
        loadShim(shim);
        bind(library);
        return library.toString();
    }

    private static void loadShim(Path shim) {
        System.load(shim.toAbsolutePath().toString());
        int compiled = Native.compiledAbiVersion();
        if (compiled != Native.ABI_VERSION) {
            throw unavailable(shim + " was built for ABI version " + compiled + ", these classes for "
                + Native.ABI_VERSION + ": use the jar's own native code");
        }
    }

    /** Opens libapplepay at path and refuses it unless its ap_version is the one these classes were built for. */
    static void bind(Path library) {
        byte[] path = (library.toAbsolutePath().toString() + "\0").getBytes(StandardCharsets.UTF_8);
        int version = Native.bind(path);
        if (version != Native.ABI_VERSION) {
            throw unavailable(library + " has ABI version " + version + ", these classes need " + Native.ABI_VERSION
                + ": use the libapplepay of the same release");
        }
    }

    private static Path extractionParent() {
        String configured = System.getProperty("applepay.tmpdir");
        return Paths.get(configured != null ? configured : System.getProperty("java.io.tmpdir"));
    }

    /**
     * A new directory under parent that only this user can enter (0700), refusing a parent that others could
     * replace it in (writable by group or others without the sticky bit, or not a directory) and a result that
     * is not a private directory of ours.
     */
    static Path privateDirectory(Path parent) throws IOException {
        if (!Files.isDirectory(parent)) throw unavailable("the extraction directory " + parent + " is not a directory");
        int mode = (Integer) Files.getAttribute(parent, "unix:mode");
        boolean sticky = (mode & 01000) != 0;
        if ((mode & 0022) != 0 && !sticky) {
            throw unavailable("the extraction directory " + parent + " is writable by others (mode "
                + Integer.toOctalString(mode & 07777) + ") without the sticky bit: set -Dapplepay.tmpdir to a private one");
        }
        Set<PosixFilePermission> owner = EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE,
            PosixFilePermission.OWNER_EXECUTE);
        Path directory = Files.createTempDirectory(parent, "applepay-", PosixFilePermissions.asFileAttribute(owner));
        PosixFileAttributes made = Files.readAttributes(directory, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        int uid = (Integer) Files.getAttribute(directory, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        int me = (Integer) Files.getAttribute(Paths.get("/proc/self"), "unix:uid");
        if (!made.isDirectory() || !made.permissions().equals(owner) || uid != me) {
            Files.deleteIfExists(directory);
            throw unavailable("the extraction directory " + directory + " is not private (mode "
                + PosixFilePermissions.toString(made.permissions()) + ", owner " + uid + ")");
        }
        return directory;
    }

    private static Path extract(URL resource, Path target, List<Path> written) throws IOException {
        try (InputStream in = resource.openStream()) {
            // A new file in our private directory: no link or earlier file can be there to follow or reuse.
            Files.copy(in, target);
        }
        written.add(target);
        Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("r-x------"));
        return target;
    }

    private static Path onLibraryPath(String... names) {
        String path = System.getProperty("java.library.path", "");
        for (String directory : path.split(File.pathSeparator)) {
            if (directory.isEmpty()) continue;
            for (String name : names) {
                Path candidate = Paths.get(directory, name);
                if (Files.isRegularFile(candidate)) return candidate;
            }
        }
        return null;
    }

    private static ApplePayException unavailable(String message) {
        return new ApplePayException(Codes.LIBRARY_UNAVAILABLE, message, null);
    }
}
