// Wiping, constant-time comparison and the scoped password C string: the memory rules for secrets,
// on libsodium.
internal import CShims
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

package enum SecureMemory {
    /// libsodium must be initialised once before its functions are used.
    package static let isReady: Bool = sodium_init() >= 0

    /// Zeroes `count` bytes in a way the compiler cannot drop (`sodium_memzero`).
    package static func wipe(_ base: UnsafeMutableRawPointer, count: Int) { sodium_memzero(base, count) }

    package static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { sodium_memzero(base, raw.count) }
        }
    }

    /// Constant-time equality for hashes and other secrets.
    package static func constantTimeEquals(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count, let pa = a.baseAddress, let pb = b.baseAddress else {
            return a.count == 0 && b.count == 0
        }
        return sodium_memcmp(pa, pb, a.count) == 0
    }

    package static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { ra in b.withUnsafeBytes { rb in constantTimeEquals(ra, rb) } }
    }
}

/// Plain equality of non-secret bytes (certificates, OIDs, hashes of public keys) with memcmp.
package func bytesEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    guard a.count == b.count else { return false }
    guard a.count > 0, let pa = a.baseAddress, let pb = b.baseAddress else { return true }
    return memcmp(pa, pb, a.count) == 0
}

package func bytesEqual(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Bool {
    a.withUnsafeBytes { bytesEqual($0, b) }
}

/// Runs `body` with a NUL-terminated password (or NULL), wiping the copy afterwards. The C string is
/// written straight from the String's UTF-8 view into a buffer of our own: `utf8CString` would leave
/// an unwiped intermediate array behind.
package func withPassword<R>(_ password: String?, _ body: (UnsafeMutableRawPointer?) -> R) -> R {
    guard let password else { return body(nil) }
    let count = password.utf8.count
    let chars = UnsafeMutableRawBufferPointer.allocate(byteCount: count + 1, alignment: 1)
    defer {
        sodium_memzero(chars.baseAddress, chars.count)
        chars.deallocate()
    }
    _ = chars.initializeMemory(as: UInt8.self, from: password.utf8)
    chars[count] = 0
    return body(chars.baseAddress)
}
