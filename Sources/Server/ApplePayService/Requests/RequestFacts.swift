// What a handler learned about its request (outcome, merchant, tokens), for the one log line per request.
import Synchronization

/// What a handler learned about its request, read by the logging middleware after the response.
final class RequestFacts: Sendable {
    struct Values {
        var outcome: String?
        var merchant: String?
        var tokens = 0
    }
    let values = Mutex(Values())
}
