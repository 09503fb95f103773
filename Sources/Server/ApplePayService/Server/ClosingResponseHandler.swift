// A response that says `Connection: close` ends its connection once written: the rest of a body its
// handler abandoned (over the limit, too slow, refused) is not read, and no request pipelined behind it
// is served. Without this, Hummingbird drains an unread body, however large, to keep the connection,
// and serves what follows.
import NIOCore
import NIOHTTPTypes

/// After the HTTP codec (NIO's pipelining handler holds a pipelined request until the response before it
/// has ended, so nothing behind a closing response has reached the server yet).
final class ClosingResponseHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    private var closing = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Once the answer is closing, whatever the client still sends is dropped unread.
        guard !closing else { return }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case let .head(head) where head.headerFields[.connection] == "close":
            closing = true
            context.write(data, promise: promise)
        case .end where closing:
            // Closed once the end is on the socket, so that the answer itself is not lost.
            let written = promise ?? context.eventLoop.makePromise()
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            written.futureResult.whenComplete { _ in loopBound.value.close(promise: nil) }
            context.write(data, promise: written)
        default:
            context.write(data, promise: promise)
        }
    }
}
