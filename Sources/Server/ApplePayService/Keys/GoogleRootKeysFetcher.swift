// Google's published root keys document fetched over HTTPS: bounded in size, read by the engine's one
// strict reader, with the Cache-Control max-age that says how long it may be kept.
import ApplePayDecryption
import AsyncHTTPClient
import Foundation
import NIOCore

/// Fetches the root keys document from `--google-root-keys URL` (AsyncHTTPClient, the system's CA store).
struct GoogleRootKeysFetcher: Sendable {
    /// One fetch's result.
    struct Fetched: Sendable {
        let rootKeys: GooglePayRootKeys
        /// Cache-Control max-age in seconds; nil when the answer gives none (or forbids caching).
        let maxAge: Int64?
    }

    let url: URL

    /// The largest document read: the engine's bound on keys (``GooglePayRootKeys/maximumKeyCount``)
    /// at a generous kilobyte each (Google's document lists a handful in about 1 KiB).
    static let maximumBytes = GooglePayRootKeys.maximumKeyCount * 1024
    static let timeout = TimeAmount.seconds(15)

    /// Fetches and reads the document; throws a `ServiceConfigurationError` saying why not.
    func fetch() async throws -> Fetched {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.headers.add(name: "Accept", value: "application/json")
        let response: HTTPClientResponse
        do {
            response = try await HTTPClient.shared.execute(request, timeout: Self.timeout)
        } catch {
            throw ServiceConfigurationError("\(url): \(error)")
        }
        guard response.status == .ok else {
            throw ServiceConfigurationError("\(url) answered \(response.status.code) \(response.status.reasonPhrase)")
        }
        if let length = response.headers.first(name: "content-length").flatMap(Int.init), length > Self.maximumBytes {
            throw ServiceConfigurationError("\(url): the document is \(length) bytes, over \(Self.maximumBytes)")
        }
        let body: ByteBuffer
        do {
            body = try await response.body.collect(upTo: Self.maximumBytes)
        } catch is NIOTooManyBytesError {
            throw ServiceConfigurationError("\(url): the document is over \(Self.maximumBytes) bytes")
        } catch {
            throw ServiceConfigurationError("\(url): \(error)")
        }
        do throws(ConfigurationError) {
            let rootKeys = try GooglePayRootKeys(json: body.readableBytesView)
            return Fetched(
                rootKeys: rootKeys, maxAge: Self.maxAge(cacheControl: response.headers[canonicalForm: "cache-control"]))
        } catch {
            throw ServiceConfigurationError("\(url): \(error.message)")
        }
    }

    /// `max-age=N` from Cache-Control (as Tink's GooglePaymentsPublicKeysManager reads it); `no-store`
    /// or `no-cache` count as no max-age.
    static func maxAge(cacheControl directives: [Substring]) -> Int64? {
        var maxAge: Int64?
        for directive in directives {
            let text = directive.trimmingCharacters(in: .whitespaces).lowercased()
            if text == "no-store" || text == "no-cache" { return nil }
            if text.hasPrefix("max-age=") {
                maxAge = Int64(
                    text.dropFirst("max-age=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
            }
        }
        return maxAge.map { max(0, $0) }
    }
}
