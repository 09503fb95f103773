// A real HTTPS gateway on loopback for the tests: NIO + NIOSSL, client certificates from the test CA required.
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// What the gateway received.
struct RecordedRequest: Sendable {
    let method: String
    let uri: String
    let headers: [(String, String)]
    let body: [UInt8]

    var path: String { String(uri.prefix { $0 != "?" }) }
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }
    func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
}

/// How the gateway answers one request.
enum GatewayReply: Sendable {
    case answer(status: Int, headers: [(String, String)] = [("Content-Type", "application/json")], body: [UInt8])
    /// Reads the request and never answers (the client's deadline must fire).
    case silence
}

final class TestGateway: Sendable {
    let port: Int
    private let channel: Channel
    /// Accepted TCP connections, counted before any TLS: zero proves a client never came.
    private let acceptedConnections = Atomic<Int>(0)
    private let recorded = Mutex<[RecordedRequest]>([])

    var connectionCount: Int { acceptedConnections.load(ordering: .sequentiallyConsistent) }
    var requests: [RecordedRequest] { recorded.withLock { $0 } }
    var baseURL: String { "https://127.0.0.1:\(port)" }

    init(
        pki: TestPKI = .shared, requireClientCertificate: Bool = true,
        reply: @escaping @Sendable (RecordedRequest) -> GatewayReply
    ) async throws {
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(pki.path("server.pem")).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: pki.path("server.key"), format: .pem)))
        if requireClientCertificate {
            // NIOSSL's server verification means SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT.
            tls.certificateVerification = .noHostnameVerification
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(pki.path("ca.pem")))
        }
        let context = try NIOSSLContext(configuration: tls)
        let box = Box()
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                box.gateway?.acceptedConnections.add(1, ordering: .sequentiallyConsistent)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(
                        GatewayHandler(record: { request in
                            box.gateway?.recorded.withLock { $0.append(request) }
                            return reply(request)
                        }))
                }
            }
        channel = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress!.port!
        box.gateway = self
    }

    func stop() async {
        try? await channel.close()
    }

    /// Lets the child initializer reach the gateway once it exists (set once, before any connection).
    private final class Box: @unchecked Sendable {
        weak var gateway: TestGateway?
    }
}

private final class GatewayHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let record: @Sendable (RecordedRequest) -> GatewayReply
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(record: @escaping @Sendable (RecordedRequest) -> GatewayReply) { self.record = record }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
        case .body(var buffer):
            body += buffer.readBytes(length: buffer.readableBytes) ?? []
        case .end:
            guard let head else { return }
            let request = RecordedRequest(
                method: head.method.rawValue, uri: head.uri, headers: head.headers.map { ($0.name, $0.value) },
                body: body)
            switch record(request) {
            case .silence:
                break
            case .answer(let status, let headers, let bytes):
                var responseHead = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: status))
                for (name, value) in headers { responseHead.headers.add(name: name, value: value) }
                responseHead.headers.add(name: "Content-Length", value: String(bytes.count))
                context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes)))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
