// ap_config_set_multibuffer's choice for decryptBatch: Intel's crypto_mb eight tokens at a time, or OpenSSL.
package io.github.applepaydecryption;

/** The P-256 backend of {@link Decryptor#decryptBatch}: results are identical either way. */
public enum MultiBuffer {
    /** crypto_mb where it can run (AVX-512 IFMA, the library found), else OpenSSL: the default. */
    AUTO,
    /** crypto_mb, or {@link Decryptor.Builder#build()} fails naming why it cannot. */
    ON,
    /** OpenSSL always. */
    OFF
}
