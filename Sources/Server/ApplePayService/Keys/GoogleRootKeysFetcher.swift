// Google's published root keys document fetched over HTTPS: bounded in size and time (head and body under
// one deadline), no redirect followed, read by the engine's one strict reader, refused unless a key in it
// is valid now, with the Cache-Control max-age (bounded) that says how long it may be kept.
import ApplePayDecryption
import AsyncHTTPClient
import Foundation
import NIOCore

/// Fetches the root keys document from `--google-root-keys URL` (AsyncHTTPClient, the system's CA store).
/// Owns its HTTP client: ``shutdown()`` it when the service stops.
struct GoogleRootKeysFetcher: Sendable {
    /// One fetch's result.
    struct Fetched: Sendable {
        let rootKeys: GooglePayRootKeys
        /// Cache-Control max-age in seconds; nil when the answer gives none (or forbids caching).
        let maxAge: Int64?
    }

    let url: URL
    /// Its own client, not `HTTPClient.shared`: that one follows up to 20 redirects, so an https URL could
    /// land on plain http or another host, and whoever answers there would choose the root keys.
    let client: HTTPClient

    init(url: URL) {
        self.url = url
        client = HTTPClient(configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
    }

    /// Closes the client's connections; a fetch after this fails.
    func shutdown() async {
        try? await client.shutdown()
    }

    /// The largest document read: the engine's bound on keys (``GooglePayRootKeys/maximumKeyCount``)
    /// at a generous kilobyte each (Google's document lists a handful in about 1 KiB).
    static let maximumBytes = GooglePayRootKeys.maximumKeyCount * 1024
    /// One deadline over the whole fetch, head and body.
    static let timeout = TimeAmount.seconds(15)
    /// The longest max-age taken: a day. Google's answers say about a day or less; a larger or absurd one
    /// (up to Int64's range) must neither overflow the refresh arithmetic nor pin a document for years.
    static let maximumMaxAge: Int64 = 86_400

    /// Fetches and reads the document within ``timeout``; throws a `ServiceConfigurationError` saying why
    /// not.
    func fetch() async throws -> Fetched {
        // AsyncHTTPClient's own deadline stops at the response head: a server trickling the body would
        // hold start-up, the refreshes and SIGHUP for ever. The group's sleep bounds head and body together.
        try await withThrowingTaskGroup(of: Fetched?.self) { group in
            group.addTask { try await fetchUnbounded() }
            group.addTask {
                try await Task.sleep(for: .nanoseconds(Self.timeout.nanoseconds))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let fetched = first else {
                throw ServiceConfigurationError(
                    "\(url): no complete answer within \(Self.timeout.nanoseconds / 1_000_000_000) s")
            }
            return fetched
        }
    }

    private func fetchUnbounded() async throws -> Fetched {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.headers.add(name: "Accept", value: "application/json")
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: Self.timeout)
        } catch {
            throw ServiceConfigurationError("\(url): \(error)")
        }
        if (300..<400).contains(response.status.code) {
            let location = response.headers.first(name: "location") ?? "nowhere"
            throw ServiceConfigurationError(
                "\(url) answered \(response.status.code) \(response.status.reasonPhrase) (to \(location)); redirects are not followed"
            )
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
            guard Self.hasAKeyValidNow(rootKeys) else {
                throw ConfigurationError(
                    .invalidOption, "no key in the document is valid now (every keyExpiration has passed)")
            }
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
        return maxAge.map { min(max(0, $0), maximumMaxAge) }
    }

    /// A document none of whose keys is valid now (all past their keyExpiration) would verify no token:
    /// it is a failed fetch, so the last good document stays in use.
    static func hasAKeyValidNow(_ rootKeys: GooglePayRootKeys) -> Bool {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        return rootKeys.keys.contains { ($0.keyExpiration ?? Int64.max) > now }
    }
}
