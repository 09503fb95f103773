// The algorithms fetched from OpenSSL's default provider once per process (AES-GCM, AES-CTR, SHA-256).
internal import CShims

/// Algorithms fetched from the default provider once per process. Fetching is costly; a fetched
/// algorithm is immutable and thread-safe.
package final class FetchedAlgorithms: @unchecked Sendable {
    // Sendable: set once at first use, never mutated, OpenSSL documents fetched objects as shareable.
    let aes256GCM: OpaquePointer
    let aes128GCM: OpaquePointer
    let sha256: OpaquePointer
    /// Google Pay's ECv1 and ECv2 message ciphers.
    let aes128CTR: OpaquePointer
    let aes256CTR: OpaquePointer

    package static let shared = FetchedAlgorithms()

    private init() {
        OpenSSLGlobalState.beginDecoding()
        defer { OpenSSLGlobalState.endDecoding() }
        guard let a256 = EVP_CIPHER_fetch(nil, "AES-256-GCM", nil),
            let a128 = EVP_CIPHER_fetch(nil, "AES-128-GCM", nil),
            let sha = EVP_MD_fetch(nil, "SHA256", nil),
            let ctr128 = EVP_CIPHER_fetch(nil, "AES-128-CTR", nil),
            let ctr256 = EVP_CIPHER_fetch(nil, "AES-256-CTR", nil)
        else {
            fatalError("OpenSSL cannot provide AES-GCM and SHA-256: \(OpenSSLErrors.drain() ?? "no provider")")
        }
        aes256GCM = a256
        aes128GCM = a128
        sha256 = sha
        aes128CTR = ctr128
        aes256CTR = ctr256
    }
}
