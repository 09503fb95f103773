// POST /v1/merchant-session: Apple Pay on the Web merchant validation, proxied with the merchant identity
// certificate; every request member is checked before any connection leaves the service.
import ApplePayDecryption
import ApplePayMerchantAPI
import Foundation
import Hummingbird
import Logging
import NIOCore

/// The endpoint's work when the service runs with a merchant configuration (`--merchant-identity` and the rest).
struct MerchantSessionProxy: Sendable {
    let client: MerchantAPIClient
    /// `--merchant-display-name`: used when a request sends no `displayName`.
    let displayName: String
    let metrics: ServiceMetrics
    let requestTimeout: Duration
    /// `--merchant-allow-display-name`: whether a request may name the store itself.
    let allowDisplayName: Bool
    /// `--merchant-max-in-flight`: gateway calls at once; each one holds a pooled TLS connection made with
    /// the merchant identity, so a flood is refused here rather than queued.
    let inFlight: InFlightLimit

    /// A request is two URLs-or-names and an optional display name: a validation URL is at most 2048
    /// bytes, the rest far less. Anything larger is not a merchant-session request.
    static let bodyLimit = 8 << 10
    static let members: Set<String> = ["validationURL", "initiativeContext", "displayName"]

    /// The checked request: what is sent, and nothing else.
    struct SessionRequest {
        var validationURL: String
        var initiativeContext: String
        var displayName: String
    }

    struct Refusal: Error {
        let code: String
        let message: String
        let field: String?
    }

    func handle(_ request: Request, context: ServiceRequestContext) async throws -> Response {
        context.facts.values.withLock { $0.merchant = client.merchantIdentifier }
        let body: [UInt8]
        switch try await RequestBodyCollector.collect(
            request, limit: Self.bodyLimit, deadline: requestTimeout, on: context.channel)
        {
        case let .complete(bytes): body = bytes
        case .tooLarge:
            var response = finish(
                context, .contentTooLarge, code: "payloadTooLarge",
                message: "the body is over the limit of \(Self.bodyLimit) bytes", field: nil)
            response.headers[.connection] = "close"
            return response
        case .timedOut:
            var response = finish(
                context, .requestTimeout, code: "requestTimeout",
                message: "the body did not arrive within \(requestTimeout.components.seconds) s", field: nil)
            response.headers[.connection] = "close"
            return response
        }
        let checked: SessionRequest
        do {
            checked = try check(body)
        } catch {
            return finish(context, .unprocessableContent, code: error.code, message: error.message, field: error.field)
        }
        guard inFlight.enter() else {
            var response = finish(
                context, .serviceUnavailable, code: "merchantSessionBusy",
                message: "\(inFlight.limit) merchant-session requests are already with the gateway; retry shortly",
                field: nil)
            response.headers[.retryAfter] = "1"
            return response
        }
        defer { inFlight.leave() }
        do {
            let session = try await client.requestPaymentSession(
                displayName: checked.displayName, initiativeContext: checked.initiativeContext,
                validationURL: checked.validationURL)
            record(context, outcome: "ok")
            // Apple's signature inside covers these bytes: passed on exactly as the gateway sent them.
            var headers = JSONResponse.json
            headers[.cacheControl] = "no-store"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: session.json)))
        } catch {
            return gatewayFailure(error, context: context)
        }
    }

    /// The request's members, each checked by the same rules the client applies, so that a refusal
    /// names its member and nothing is sent.
    func check(_ body: [UInt8]) throws(Refusal) -> SessionRequest {
        guard case let .object(members)? = try? JSONValue.parse(body) else {
            throw Refusal(
                code: "invalidRequest",
                message: "the body is not a JSON object {\"validationURL\": …, \"initiativeContext\": …}", field: nil)
        }
        var strings: [String: String] = [:]
        for (name, value) in members {
            guard Self.members.contains(name) else {
                throw Refusal(
                    code: "invalidRequest",
                    message:
                        "\(JSONValue.string(name)) is not a member of a merchant-session request (validationURL, initiativeContext, displayName)",
                    field: name)
            }
            guard strings[name] == nil else {
                throw Refusal(code: "invalidRequest", message: "\(name) is given more than once", field: name)
            }
            guard case let .string(text) = value else {
                throw Refusal(code: "invalidRequest", message: "\(name) must be a string", field: name)
            }
            strings[name] = text
        }
        guard let url = strings["validationURL"] else {
            throw Refusal(
                code: "invalidRequest", message: "validationURL (from the onvalidatemerchant event) is required",
                field: "validationURL")
        }
        guard let initiativeContext = strings["initiativeContext"] else {
            throw Refusal(
                code: "invalidRequest", message: "initiativeContext (the domain of the payment page) is required",
                field: "initiativeContext")
        }
        do {
            _ = try MerchantValidationURL(url, environment: client.gateway.environment)
        } catch {
            throw Refusal(code: error.code.rawValue, message: error.message, field: "validationURL")
        }
        do throws(MerchantAPIError) {
            let domain = try RequestRules.normalisedDomain(initiativeContext, member: "initiativeContext")
            guard client.domains.contains(domain) else {
                throw MerchantAPIError(
                    .invalidRequest,
                    "initiativeContext \(domain) is not one of the domains this service is configured for")
            }
        } catch {
            throw Refusal(code: "invalidRequest", message: error.message, field: "initiativeContext")
        }
        if strings["displayName"] != nil, !allowDisplayName {
            throw Refusal(
                code: "invalidRequest",
                message:
                    "displayName is not accepted: this service shows its configured store name (--merchant-allow-display-name lets a request choose)",
                field: "displayName")
        }
        let name = strings["displayName"] ?? displayName
        do { try RequestRules.checkDisplayName(name) } catch {
            throw Refusal(code: "invalidRequest", message: error.message, field: "displayName")
        }
        return SessionRequest(validationURL: url, initiativeContext: initiativeContext, displayName: name)
    }

    /// 504 for a gateway that did not answer in time, 502 for everything else the gateway (or the way to
    /// it) did; a refusal the client makes itself stays 422. The caller gets the code and a fixed
    /// message: the client's own text (addresses, DNS and TLS library detail) goes to the log only. What
    /// the gateway itself said (its status, `statusCode`, `statusMessage`, cleaned by the client) is passed on.
    func gatewayFailure(_ error: MerchantAPIError, context: ServiceRequestContext) -> Response {
        let status: HTTPResponse.Status
        let message: String
        switch error.code {
        case .invalidValidationURL, .invalidRequest:
            status = .unprocessableContent
            message = "the merchant API client refused the request"
        case .timeout:
            status = .gatewayTimeout
            message = "the merchant gateway did not answer in time"
        case .gatewayError:
            status = .badGateway
            message = "the merchant gateway answered with an error" + (error.httpStatus.map { " (HTTP \($0))" } ?? "")
        case .connectionFailed:
            status = .badGateway
            message =
                "the connection to the merchant gateway failed or was closed; it may have refused the merchant identity certificate (details in the service log)"
        case .tlsFailure:
            status = .badGateway
            message =
                "TLS with the merchant gateway failed: its certificate is not trusted or it refused the merchant identity certificate (details in the service log)"
        case .redirectRefused:
            status = .badGateway
            message = "the merchant gateway answered with a redirect; redirects are never followed"
        case .invalidResponse:
            status = .badGateway
            message = "the merchant gateway's answer is not usable (details in the service log)"
        case .invalidIdentity:
            status = .badGateway
            message = "the merchant identity is not usable (details in the service log)"
        }
        context.logger.warning(
            "merchant session failed", metadata: ["code": "\(error.code.rawValue)", "detail": "\(error.message)"])
        var extra = ""
        if let httpStatus = error.httpStatus { extra += ",\"gatewayStatus\":\(httpStatus)" }
        if let code = error.statusCode { extra += ",\"statusCode\":\(JSONValue.string(code))" }
        if let message = error.statusMessage { extra += ",\"statusMessage\":\(JSONValue.string(message))" }
        return finish(context, status, code: error.code.rawValue, message: message, field: nil, extra: extra)
    }

    func record(_ context: ServiceRequestContext, outcome: String) {
        metrics.merchantSession(outcome: outcome)
        context.facts.values.withLock { $0.outcome = outcome }
    }

    func finish(
        _ context: ServiceRequestContext, _ status: HTTPResponse.Status, code: String, message: String, field: String?,
        extra: String = ""
    ) -> Response {
        record(context, outcome: code)
        var body = JSONResponse.errorBody(code: code, message: message, field: field)
        body.removeLast()
        var response = JSONResponse.make(status, body + extra + "}")
        response.headers[.cacheControl] = "no-store"
        return response
    }

    /// Outcomes counted in `applepay_merchant_sessions_total`.
    static let outcomes =
        ["ok", "payloadTooLarge", "requestTimeout", "merchantSessionNotConfigured", "merchantSessionBusy"]
        + MerchantAPIError.Code.allCases.map(\.rawValue)
}
