// The client for Apple Pay on the Web's merchant API: four operations over mutual TLS, nothing followed blindly.
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// Talks to Apple's gateway on behalf of one merchant identifier, authenticated by its merchant identity
/// certificate. Every request member is checked before a connection is opened; redirects are never
/// followed; every call has one deadline. Call `shutdown()` when done.
public final class MerchantAPIClient: Sendable {
    public let merchantIdentifier: String
    /// The merchant's verified domains: a session's `initiativeContext` must be one of them (normalised).
    public let domains: [String]
    public let gateway: Gateway
    public let timeout: Duration

    /// A session answer is about 2 KiB and a domain list a few KiB; anything far larger is not Apple's.
    static let maximumResponseBytes = 1 << 20

    private let http: HTTPClient

    public convenience init(
        merchantIdentifier: String, identity: MerchantTLSIdentity, domains: [String] = [],
        gateway: Gateway = .production, timeout: Duration = .seconds(30)
    ) throws(MerchantAPIError) {
        try self.init(
            merchantIdentifier: merchantIdentifier, optionalIdentity: identity, domains: domains, gateway: gateway,
            timeout: timeout)
    }

    /// `identity` nil only for the tests that prove a gateway refuses a client without a certificate.
    init(
        merchantIdentifier: String, optionalIdentity identity: MerchantTLSIdentity?, domains: [String],
        gateway: Gateway, timeout: Duration
    ) throws(MerchantAPIError) {
        try RequestRules.checkMerchantIdentifier(merchantIdentifier)
        var normalised: [String] = []
        for domain in domains { normalised.append(try RequestRules.normalisedDomain(domain, member: "domain")) }
        guard timeout > .zero else { throw MerchantAPIError(.invalidRequest, "the timeout must be positive") }

        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        // Closing waits this long for the gateway's close_notify (NIOSSL's default is 5 s): a gateway
        // that went silent, or whose oversized answer we dropped, would otherwise hold up shutdown().
        tls.shutdownTimeout = .seconds(1)
        if let identity {
            tls.certificateChain = identity.certificateChain.map { .certificate($0) }
            tls.privateKey = .privateKey(identity.privateKey)
        }
        if let replacement = gateway.replacement {
            let roots = (try? NIOSSLCertificate.fromPEMBytes(replacement.trustRootPEM)) ?? []
            guard !roots.isEmpty else {
                throw MerchantAPIError(.invalidRequest, "the test gateway's trust root is not a PEM certificate")
            }
            tls.trustRoots = .certificates(roots)
        }
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .disallow,
            timeout: .init(connect: TimeAmount(timeout), read: TimeAmount(timeout)),
            proxy: nil,
            decompression: .disabled)
        configuration.httpVersion = .automatic
        // A refused handshake (untrusted gateway, refused identity) or a refused connection is reported at
        // once instead of being retried with back-off until the deadline.
        configuration.connectionPool.retryConnectionEstablishment = false
        self.http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        self.merchantIdentifier = merchantIdentifier
        self.domains = normalised
        self.gateway = gateway
        self.timeout = timeout
    }

    public func shutdown() async throws {
        try await http.shutdown()
    }

    // MARK: Operations

    /// `requestPaymentSession`: validates the merchant and returns Apple's opaque session, byte for byte.
    /// `validationURL` is the browser's `onvalidatemerchant` URL; without one the environment's default
    /// host is used. `displayName` and `initiativeContext` are checked by `RequestRules` and the domain list.
    public func requestPaymentSession(displayName: String, initiativeContext: String, validationURL: String? = nil)
        async throws(MerchantAPIError) -> MerchantSession
    {
        let target: String
        if let validationURL {
            target = gateway.url(for: try MerchantValidationURL(validationURL, environment: gateway.environment))
        } else {
            target = gateway.url(operation: "/paymentSession")
        }
        try RequestRules.checkDisplayName(displayName)
        let context = try RequestRules.normalisedDomain(initiativeContext, member: "initiativeContext")
        guard domains.contains(context) else {
            throw MerchantAPIError(
                .invalidRequest,
                "initiativeContext \(context) is not one of the configured domains (\(domains.joined(separator: ", ")))"
            )
        }
        let body = PaymentSessionBody(
            merchantIdentifier: merchantIdentifier, displayName: displayName, initiative: "web",
            initiativeContext: context)
        let answer = try await send(.POST, target, json: try encode(body))
        guard (try? JSONSerialization.jsonObject(with: Data(answer))) is [String: Any] else {
            throw MerchantAPIError(.invalidResponse, "the gateway's session answer is not a JSON object")
        }
        return MerchantSession(json: answer)
    }

    /// `registerMerchant`: registers domains for Apple Pay on the Web (each must serve Apple's domain
    /// association file first).
    public func registerMerchant(domainNames: [String]) async throws(MerchantAPIError) -> MerchantRegistration {
        guard !domainNames.isEmpty else { throw MerchantAPIError(.invalidRequest, "no domain to register") }
        var names: [String] = []
        for name in domainNames { names.append(try RequestRules.normalisedDomain(name, member: "domainNames")) }
        let body = MerchantRegistrationBody(merchantIdentifier: merchantIdentifier, domainNames: names)
        let answer = try await send(.POST, gateway.url(operation: "/registerMerchant"), json: try encode(body))
        return try decode(MerchantRegistration.self, answer)
    }

    /// `listMerchantDomains`.
    public func listMerchantDomains() async throws(MerchantAPIError) -> MerchantDomains {
        let url = gateway.url(operation: "/domains") + "?merchantIdentifier=" + Self.queryValue(merchantIdentifier)
        return try decode(MerchantDomains.self, try await send(.GET, url, json: nil))
    }

    /// `removeMerchantDomain`. A 404 (not registered) is a `gatewayError` with `httpStatus` 404.
    public func removeMerchantDomain(_ domainName: String) async throws(MerchantAPIError) {
        let name = try RequestRules.normalisedDomain(domainName, member: "domainName")
        let url =
            gateway.url(operation: "/domains") + "?merchantIdentifier=" + Self.queryValue(merchantIdentifier)
            + "&domainName=" + Self.queryValue(name)
        _ = try await send(.DELETE, url, json: nil)
    }

    // MARK: Transport

    private func send(_ method: HTTPMethod, _ url: String, json: [UInt8]?) async throws(MerchantAPIError) -> [UInt8] {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Accept", value: "application/json")
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: json))
        }
        let deadline = NIODeadline.now() + TimeAmount(timeout)
        let status: Int, location: String?, body: ByteBuffer
        do {
            let response = try await http.execute(request, deadline: deadline)
            status = Int(response.status.code)
            location = response.headers.first(name: "Location")
            body = try await response.body.collect(upTo: Self.maximumResponseBytes)
        } catch {
            throw Self.transportError(error, timeout: timeout)
        }
        let bytes = Array(body.readableBytesView)
        switch status {
        case 200..<300:
            return bytes
        case 300..<400:
            throw MerchantAPIError(
                .redirectRefused,
                "the gateway answered \(status) with a redirect"
                    + (location.map { " to \(Printable.bounded($0))" } ?? "") + "; redirects are never followed",
                httpStatus: status)
        default:
            let detail = try? JSONDecoder().decode(GatewayErrorBody.self, from: Data(bytes))
            let code = detail?.statusCode.map { Printable.bounded($0, limit: 40) }
            let text = detail?.statusMessage.map { Printable.bounded($0, limit: 500) }
            var message = "the gateway answered HTTP \(status)"
            if let code { message += ", statusCode \(code)" }
            if let text { message += ": \(text)" }
            throw MerchantAPIError(.gatewayError, message, httpStatus: status, statusCode: code, statusMessage: text)
        }
    }

    static func transportError(_ error: any Error, timeout: Duration) -> MerchantAPIError {
        if error is NIOTooManyBytesError {
            return MerchantAPIError(
                .invalidResponse, "the gateway's answer is larger than \(maximumResponseBytes) bytes")
        }
        if let error = error as? HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout, .connectTimeout, .tlsHandshakeTimeout, .writeTimeout,
                .getConnectionFromPoolTimeout:
                return MerchantAPIError(.timeout, "no answer from the gateway within \(timeout) (\(error))")
            case .remoteConnectionClosed:
                return MerchantAPIError(
                    .connectionFailed,
                    "the gateway closed the connection without answering; it may have refused the merchant identity certificate"
                )
            default:
                return MerchantAPIError(
                    .connectionFailed,
                    "the request to the gateway failed: \(Printable.bounded(String(describing: error)))")
            }
        }
        if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError {
            return tlsError(String(describing: error))
        }
        return MerchantAPIError(
            .connectionFailed, "cannot reach the gateway: \(Printable.bounded(String(describing: error), limit: 400))")
    }

    /// Names which side refused, from BoringSSL's reason (the rest of its text is a source path).
    static func tlsError(_ detail: String) -> MerchantAPIError {
        let reasons = detail.split(separator: ":").map { $0.prefix { $0.isUppercase || $0.isNumber || $0 == "_" } }
            .filter { $0.count > 3 && $0.contains("_") }.map(String.init)
        let reason = reasons.last ?? Printable.bounded(detail, limit: 200)
        if reason.contains("CERTIFICATE_VERIFY_FAILED") {
            return MerchantAPIError(
                .tlsFailure, "TLS with the gateway failed (\(reason)): the gateway's certificate is not trusted")
        }
        if reason.contains("ALERT") {
            return MerchantAPIError(
                .tlsFailure,
                "TLS with the gateway failed (\(reason)): the gateway refused the merchant identity certificate (none sent, not issued by Apple for this merchant, or expired)"
            )
        }
        return MerchantAPIError(.tlsFailure, "TLS with the gateway failed (\(reason))")
    }

    private func encode(_ value: some Encodable) throws(MerchantAPIError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do { return Array(try encoder.encode(value)) } catch {
            throw MerchantAPIError(.invalidRequest, "cannot encode the request")
        }
    }

    private func decode<T: Decodable>(_ type: T.Type, _ bytes: [UInt8]) throws(MerchantAPIError) -> T {
        do { return try JSONDecoder().decode(type, from: Data(bytes)) } catch {
            throw MerchantAPIError(.invalidResponse, "the gateway's answer is not a \(type) JSON object")
        }
    }

    /// Percent-encodes everything but RFC 3986's unreserved characters.
    static func queryValue(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }
}
