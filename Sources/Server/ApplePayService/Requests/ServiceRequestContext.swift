// The service's request context: Hummingbird's core context plus the request's facts.
import Hummingbird
import NIOCore

struct ServiceRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let facts = RequestFacts()
    /// The connection, so that a handler can end it (an abandoned body, a batch past its deadline);
    /// the body deadline's timer runs on its event loop and ends its input (RequestBodyCollector).
    let channel: (any Channel)?
    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
