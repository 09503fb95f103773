// --header-timeout: a request's head (its request line and headers, and a TLS handshake before the
// first) must arrive within the deadline of its first byte, or of the connection's start. The idle
// timeout alone never fires on a client that trickles a byte every few seconds.
import NIOCore
import NIOHTTPTypes

/// The clock of one connection, shared by its two watchers; touched only on the connection's event loop.
/// One timer per connection, re-armed lazily: a head that begins only notes the time, so a keep-alive
/// connection's requests cost no timer each (the timer fires at most once per `limit` and re-arms).
final class HeaderDeadline {
    let limit: TimeAmount
    private var timer: Scheduled<Void>?
    /// When the head being read began; nil while none is (a request in progress, or between requests).
    private var headBegan: NIODeadline?
    /// Between requests: the next byte to arrive is a head's first.
    var awaitingHead = true

    init(limit: TimeAmount) { self.limit = limit }

    /// A head begins (the connection's start, or a byte after the previous response ended).
    func begin(_ channel: any Channel) {
        guard headBegan == nil else { return }
        let now = NIODeadline.now()
        headBegan = now
        if timer == nil { arm(channel, at: now + limit) }
    }

    /// The whole head has arrived.
    func end() { headBegan = nil }

    func stop() {
        timer?.cancel()
        timer = nil
        headBegan = nil
    }

    private func arm(_ channel: any Channel, at deadline: NIODeadline) {
        timer = channel.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            timer = nil
            guard let began = headBegan else { return }
            if NIODeadline.now() >= began + limit {
                channel.close(promise: nil)
            } else {
                arm(channel, at: began + limit)
            }
        }
    }
}

/// First in the pipeline (before TLS and the HTTP codec): the connection's start and the first byte of
/// each head start the clock.
final class HeaderDeadlineByteWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    let deadline: HeaderDeadline

    init(limit: TimeAmount) { deadline = HeaderDeadline(limit: limit) }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { deadline.begin(context.channel) }
    }

    func channelActive(context: ChannelHandlerContext) {
        deadline.begin(context.channel)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if deadline.awaitingHead { deadline.begin(context.channel) }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline.stop()
        context.fireChannelInactive()
    }
}

/// After the HTTP codec: a whole head stops the clock; the end of its response waits for the next head.
final class HeaderDeadlinePartWatcher: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    private var deadline: HeaderDeadline?

    func handlerAdded(context: ChannelHandlerContext) {
        deadline = try? context.pipeline.syncOperations.handler(type: HeaderDeadlineByteWatcher.self).deadline
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) {
            deadline?.awaitingHead = false
            deadline?.end()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { deadline?.awaitingHead = true }
        context.write(data, promise: promise)
    }
}
