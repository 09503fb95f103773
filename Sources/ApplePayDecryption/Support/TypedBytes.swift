// Byte access that keeps a body's typed error: the standard library's `withUnsafeBytes` and
// `withContiguousStorageIfAvailable` rethrow only `any Error`, so each call site used to wrap its
// body in `Result { () throws(E) in … }.get()`. The ceremony lives here once.
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

extension ContiguousBytes {
    /// `withUnsafeBytes`, with `body`'s typed error passed through.
    @inlinable package func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try withUnsafeBytes { raw in Result { () throws(E) in try body(raw) } }.get()
    }
}

extension Sequence where Element == UInt8 {
    /// `withContiguousStorageIfAvailable` over raw bytes, with `body`'s typed error passed through;
    /// nil when the bytes are not contiguous (the body did not run).
    @inlinable package func withContiguousBytesIfAvailable<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R)
        throws(E) -> R?
    {
        try withContiguousStorageIfAvailable { buffer in
            Result { () throws(E) in try body(UnsafeRawBufferPointer(buffer)) }
        }?.get()
    }
}
