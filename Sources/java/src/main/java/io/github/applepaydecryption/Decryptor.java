// The engine through JNI: a decryptor made once from keys and options, used by any number of threads.
package io.github.applepaydecryption;

import java.io.IOException;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Verifies and decrypts Apple Pay, Google Pay and Samsung Pay tokens (told apart by their shape) with the engine of
 * libapplepay. Made by {@link #builder()}; safe to share between threads; {@link #close()} frees it (once:
 * later calls do nothing) and a decryptor never closed is freed by a {@link Cleaner} when it becomes
 * unreachable. A closed decryptor throws {@link ApplePayException} with code {@code invalidHandle}.
 *
 * <pre>{@code
 * try (Decryptor d = Decryptor.builder().merchant("cert=cert.pem,key=key.pem").build()) {
 *     Result r = d.decrypt(token, Instant.now());   // a rejected token is a Result, never an exception
 * }
 * }</pre>
 */
public final class Decryptor implements AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create();

    /** The native handle, shared with the cleaning action (which must not reach the Decryptor itself). */
    private static final class Handle implements Runnable {
        final AtomicLong value;

        Handle(long value) {
            this.value = new AtomicLong(value);
        }

        @Override
        public void run() {
            long handle = value.getAndSet(0);
            if (handle != 0) Native.decryptorFree(handle);
        }
    }

    private final Handle handle;
    private final Cleaner.Cleanable cleanable;

    private Decryptor(long handle) {
        this.handle = new Handle(handle);
        this.cleanable = CLEANER.register(this, this.handle);
    }

    /** A builder: at least one merchant, or Google Pay's root keys and a recipient id, or a Samsung Pay key. */
    public static Builder builder() {
        return new Builder();
    }

    /** The ABI version of the loaded libapplepay (the one these classes were built for; loading checks it). */
    public static int abiVersion() {
        NativeLoader.ensureLoaded();
        return Native.ABI_VERSION;
    }

    /** Where the native code was loaded from: the jar, -Dapplepay.library or java.library.path. */
    public static String nativeOrigin() {
        NativeLoader.ensureLoaded();
        return NativeLoader.origin();
    }

    private long live() {
        long value = handle.value.get();
        if (value == 0) throw new ApplePayException(Codes.INVALID_HANDLE, "this Decryptor is closed", null);
        return value;
    }

    private static long millis(Instant now) {
        Objects.requireNonNull(now, "now");
        try {
            return now.toEpochMilli();
        } catch (ArithmeticException e) {
            throw new ApplePayException(Codes.INVALID_ARGUMENT, "the instant is out of range: " + now, null);
        }
    }

    /** Verifies and decrypts one token (the paymentData JSON, a whole PKPaymentToken, its base64, or a
     *  Google Pay token) as of {@code now}. A rejected token gives its code; misuse (an empty token, over 1 MiB,
     *  a closed decryptor) throws. */
    public Result decrypt(byte[] token, Instant now) {
        return call(token, null, millis(now));
    }

    /** {@link #decrypt(byte[], Instant)} at the current time. */
    public Result decrypt(byte[] token) {
        return call(token, null, Native.REFERENCE_NOW);
    }

    /** Without a freshness check: each token is verified at its own signing time (archives; Google Pay: no expiry). */
    public Result decryptAtSigningTime(byte[] token) {
        return call(token, null, Native.REFERENCE_SIGNING_TIME);
    }

    /**
     * Decrypts an Apple Pay token, then checks that it is the payment {@code paymentRequestJson} (the
     * ApplePayPaymentRequest the merchant gave the payment sheet) asked for: a token that is not gets
     * "paymentRequestMismatch" with the request member in {@link Result#field()}. A request that breaks the
     * schema throws {@code invalidPaymentRequest} with the member in {@link ApplePayException#field()}.
     */
    public Result decrypt(byte[] token, Instant now, String paymentRequestJson) {
        Objects.requireNonNull(paymentRequestJson, "paymentRequestJson");
        return call(token, paymentRequestJson.getBytes(StandardCharsets.UTF_8), millis(now));
    }

    private Result call(byte[] token, byte[] request, long reference) {
        Objects.requireNonNull(token, "token");
        // A Decryptor exists only once the native code is loaded (build() loaded it).
        try {
            return Result.fromBlob(Native.decrypt(live(), token, request, reference));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** {@link #decryptBatch(byte[][], Instant, int)} on one lane per processor. */
    public Result[] decryptBatch(byte[][] tokens, Instant now) {
        return decryptBatch(tokens, now, 0);
    }

    /**
     * Decrypts tokens on the engine's batch lanes ({@code lanes} threads, 0 for one per processor, at most 256)
     * with a fresh replay ledger: results in input order, a verified token whose transactionId or signed contents
     * an earlier token of the call claimed is "replayedTransaction". Items may be
     * {@code {"paymentToken": ..., "paymentRequest": ...}} envelopes; a null, empty or over-1-MiB item gets
     * "invalidArgument".
     */
    public Result[] decryptBatch(byte[][] tokens, Instant now, int lanes) {
        return batch(tokens, millis(now), lanes);
    }

    /** {@link #decryptBatch(byte[][], Instant, int)} verifying each token at its own signing time. */
    public Result[] decryptBatchAtSigningTime(byte[][] tokens, int lanes) {
        return batch(tokens, Native.REFERENCE_SIGNING_TIME, lanes);
    }

    private Result[] batch(byte[][] tokens, long reference, int lanes) {
        Objects.requireNonNull(tokens, "tokens");
        if (lanes < 0) throw new ApplePayException(Codes.INVALID_ARGUMENT, "lanes must not be negative", null);
        byte[][] blobs;
        try {
            blobs = Native.decryptBatch(live(), tokens, reference, lanes);
        } finally {
            Reference.reachabilityFence(this);
        }
        Result[] results = new Result[blobs.length];
        for (int i = 0; i < blobs.length; i++) results[i] = Result.fromBlob(blobs[i]);
        return results;
    }

    /** Frees the native decryptor; calls already running finish first. A second close does nothing. */
    @Override
    public void close() {
        cleanable.clean();
    }

    /** Whether {@link #close()} was called (or the decryptor was otherwise freed). */
    public boolean isClosed() {
        return handle.value.get() == 0;
    }

    /** Collects keys and options; {@link #build()} loads them (files are read then, keys wiped after loading). */
    public static final class Builder {
        private interface Step {
            void apply(long config) throws IOException;
        }

        private final List<Step> steps = new ArrayList<>();
        /** The builder's copies of private keys, wiped when build() is done with them. */
        private final List<byte[]> secrets = new ArrayList<>();
        private boolean built;

        private Builder() {}

        private byte[] secret(byte[] bytes) {
            byte[] copy = bytes.clone();
            secrets.add(copy);
            return copy;
        }

        /** A text option as the C string the library reads; one holding a NUL, where C would read it cut short
         * ("ECv2SigningOnly\0off" as ECv2SigningOnly), fails {@link #build()} with INVALID_CONFIGURATION. */
        private static byte[] text(String s) {
            if (s == null) return null;
            if (s.indexOf('\0') >= 0) {
                throw new ApplePayException(Codes.INVALID_CONFIGURATION,
                    "a text option holds a NUL, which a C string cannot carry", null);
            }
            return (s + "\0").getBytes(StandardCharsets.UTF_8);
        }

        private Builder step(Step step) {
            steps.add(step);
            return this;
        }

        private static void set(long config, int what, byte[] a, byte[] b, byte[] c, byte[] d, long number) {
            try {
                Native.configSet(config, what, a, b, c, d, number);
            } finally {
                // c and d are made for this call (passwords among them): the shim wiped its copies, these are ours.
                for (byte[] bytes : new byte[][] {c, d}) {
                    if (bytes != null) Arrays.fill(bytes, (byte) 0);
                }
            }
        }

        private static byte[] read(Path path, String what) throws IOException {
            try {
                return Files.readAllBytes(path);
            } catch (IOException e) {
                throw new ApplePayException(Codes.INVALID_CONFIGURATION, "cannot read the " + what + " " + path + ": "
                    + e.getMessage(), null);
            }
        }

        // ---- Apple Pay ----

        /**
         * A merchant as the CLI's {@code --merchant} takes it: {@code cert=PATH,key=PATH},
         * {@code id=MERCHANT_ID,key=PATH}, {@code p12=PATH[,password-env=VAR]} or {@code cert=PATH,pkcs11=URI}
         * (RFC 7512, with module-path= and pin-source= or pin-env=); {@code key-password-env=VAR} for an
         * encrypted key. Read by the engine's own spec reader.
         */
        public Builder merchant(String spec) {
            Objects.requireNonNull(spec, "spec");
            return step(config -> set(config, Native.SET_MERCHANT_SPEC, text(spec), null, null, null, 0));
        }

        /** A merchant from its certificate (PEM or DER) and private key (PEM SEC1 or PKCS#8, or DER). */
        public Builder merchant(byte[] certificate, byte[] privateKey) {
            return merchant(certificate, privateKey, null, null);
        }

        /** As {@link #merchant(byte[], byte[])}, with the key's password and the merchant identifier (either may be null). */
        public Builder merchant(byte[] certificate, byte[] privateKey, String keyPassword, String merchantIdentifier) {
            byte[] cert = certificate.clone(), key = secret(privateKey);
            return step(config -> set(config, Native.SET_MERCHANT_CERTIFICATE, cert, key, text(keyPassword),
                text(merchantIdentifier), 0));
        }

        /** A merchant known by its identifier (e.g. "merchant.com.example") and private key. */
        public Builder merchantIdentifier(String merchantIdentifier, byte[] privateKey) {
            byte[] key = secret(privateKey);
            return step(config -> set(config, Native.SET_MERCHANT_IDENTIFIER, key, null, text(merchantIdentifier),
                null, 0));
        }

        /** A merchant from a PKCS#12 file and its password ("" for none). */
        public Builder merchantPkcs12(byte[] pkcs12, String password) {
            byte[] bytes = secret(pkcs12);
            return step(config -> set(config, Native.SET_MERCHANT_PKCS12, bytes, null, text(password), null, 0));
        }

        /** A merchant whose key stays in a PKCS#11 token: its certificate and an RFC 7512 URI naming the key. */
        public Builder merchantPkcs11(byte[] certificate, String uri) {
            byte[] cert = certificate.clone();
            return step(config -> set(config, Native.SET_MERCHANT_PKCS11, cert, null, text(uri), null, 0));
        }

        /** TESTS ONLY (the CLI's {@code --trust-root}): trusts this PEM root instead of Apple Root CA - G3. */
        public Builder insecureTestRoot(Path pem) {
            return step(config -> set(config, Native.SET_TEST_ROOT, read(pem, "test root"), null, null, null, 0));
        }

        /** The signing-time window (the CLI's {@code --window}; whole seconds, 300 by default). */
        public Builder window(Duration window) {
            long seconds = window.getSeconds();
            return step(config -> set(config, Native.SET_WINDOW, null, null, null, null, seconds));
        }

        /** decryptBatch's P-256 backend (AUTO by default). */
        public Builder multiBuffer(MultiBuffer mode) {
            long value = mode.ordinal();
            return step(config -> set(config, Native.SET_MULTIBUFFER, null, null, null, null, value));
        }

        // ---- Google Pay ----

        /** Google's root signing keys document (the CLI's {@code --google-root-keys}). */
        public Builder googleRootKeys(Path keysJson) {
            return step(config -> set(config, Native.SET_GOOGLE_ROOT_KEYS, read(keysJson, "Google root keys"), null,
                null, null, 0));
        }

        /** Google's root signing keys document, as bytes. */
        public Builder googleRootKeys(byte[] keysJson) {
            byte[] bytes = keysJson.clone();
            return step(config -> set(config, Native.SET_GOOGLE_ROOT_KEYS, bytes, null, null, null, 0));
        }

        /** A recipient id Google Pay tokens are accepted for: "merchant:ID" or "gateway:ID" (repeatable). */
        public Builder googleRecipientId(String recipientId) {
            Objects.requireNonNull(recipientId, "recipientId");
            return step(config -> set(config, Native.SET_GOOGLE_RECIPIENT, text(recipientId), null, null, null, 0));
        }

        /**
         * A Google Pay merchant key as the CLI's {@code --google-merchant-key} takes it (repeatable, tried in
         * order): {@code PATH}, {@code key=PATH[,key-password-env=VAR]}, {@code p12=PATH[,password-env=VAR]},
         * {@code pkcs11=URI,pub=PATH} or {@code pkcs11=URI,cert=PATH}.
         */
        public Builder googleMerchantKey(String spec) {
            Objects.requireNonNull(spec, "spec");
            return step(config -> set(config, Native.SET_GOOGLE_KEY_SPEC, text(spec), null, null, null, 0));
        }

        /** A Google Pay merchant private key (P-256; PEM SEC1 or PKCS#8, or DER). */
        public Builder googleMerchantKey(byte[] privateKey) {
            byte[] key = secret(privateKey);
            return step(config -> set(config, Native.SET_GOOGLE_KEY, key, null, null, null, 0));
        }

        /** A Google Pay merchant key in a PKCS#11 token: its public key (SPKI or a certificate) and RFC 7512 URI. */
        public Builder googleMerchantPkcs11(byte[] publicKey, String uri) {
            byte[] key = publicKey.clone();
            return step(config -> set(config, Native.SET_GOOGLE_PKCS11, key, null, text(uri), null, 0));
        }

        /**
         * The Google Pay protocolVersions accepted (the CLI's {@code --google-protocol-version}; repeatable):
         * "ECv1", "ECv2", "ECv2SigningOnly". None named: ECv1 and ECv2, what Google issues to merchants'
         * integrations; naming versions replaces that ({@code googleProtocolVersion("ECv2")} refuses ECv1), and
         * ECv2SigningOnly (the card data signed, not encrypted) is accepted only when named. A token of another
         * version is UNSUPPORTED_VERSION with field "protocolVersion"; another name fails {@link #build()}.
         *
         * @throws IllegalArgumentException when no version is given (leave the call out for the default)
         */
        public Builder googleProtocolVersion(String... versions) {
            if (versions.length == 0) {
                throw new IllegalArgumentException(
                    "googleProtocolVersion needs at least one version; leave the call out for ECv1 and ECv2");
            }
            for (String version : versions) {
                Objects.requireNonNull(version, "version");
                step(config -> set(config, Native.SET_GOOGLE_PROTOCOL_VERSION, text(version), null, null, null, 0));
            }
            return this;
        }

        // ---- Samsung Pay ----

        /**
         * A Samsung Pay merchant key (RSA) as the CLI's {@code --samsung-key} takes it (repeatable: keys rotate,
         * and a token's kid picks its key): {@code PATH}, {@code key=PATH[,key-password-env=VAR]},
         * {@code p12=PATH[,password-env=VAR]}, {@code pkcs11=URI,pub=PATH} or {@code pkcs11=URI,cert=PATH}.
         */
        public Builder samsungKey(String spec) {
            Objects.requireNonNull(spec, "spec");
            return step(config -> set(config, Native.SET_SAMSUNG_KEY_SPEC, text(spec), null, null, null, 0));
        }

        /** A Samsung Pay merchant private key file (RSA; PEM or DER). */
        public Builder samsungKey(Path privateKey) {
            Objects.requireNonNull(privateKey, "privateKey");
            return samsungKey(privateKey.toString());
        }

        /**
         * Loads the native library (first use), every key and option, and makes the decryptor. A builder builds
         * once: its copies of private keys are wiped when this returns.
         */
        public Decryptor build() {
            if (built) throw new IllegalStateException("this Builder has built its Decryptor already");
            built = true;
            try {
                return make();
            } finally {
                for (byte[] bytes : secrets) Arrays.fill(bytes, (byte) 0);
            }
        }

        private Decryptor make() {
            NativeLoader.ensureLoaded();
            long config = Native.configNew();
            try {
                // Instants carry milliseconds: Google Pay keys and messages expire to the millisecond.
                Native.configSet(config, Native.SET_REFERENCE_UNIT, null, null, null, null,
                    Native.REFERENCE_MILLISECONDS);
                for (Step step : steps) step.apply(config);
                return new Decryptor(Native.decryptorNew(config));
            } catch (IOException e) {
                throw new ApplePayException(Codes.INVALID_CONFIGURATION, e.getMessage(), null);
            } finally {
                Native.configFree(config);
            }
        }
    }
}
