// PEM text: finding its marker in bytes read in place, and writing DER out as PEM.
#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

package enum PEM {
    /// Whether "-----BEGIN" occurs in `bytes`, read in place (no copy of what may be a private key).
    package static func containsBeginMarker(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { raw in
            guard raw.count >= marker.count else { return false }
            return marker.withUnsafeBytes { m in
                (0...(raw.count - m.count)).contains { start in
                    bytesEqual(UnsafeRawBufferPointer(rebasing: raw[start..<start + m.count]), m)
                }
            }
        }
    }

    private static let marker: [UInt8] = Array("-----BEGIN".utf8)

    /// PEM text for DER bytes under `label` ("CERTIFICATE"), 64 characters a line.
    package static func encode(_ der: [UInt8], label: String) -> String {
        var text = "-----BEGIN \(label)-----\n"
        var rest = Substring(Data(der).base64EncodedString())
        while !rest.isEmpty {
            text += rest.prefix(64) + "\n"
            rest = rest.dropFirst(64)
        }
        return text + "-----END \(label)-----\n"
    }
}
