// A request body read whole, within a size limit and a deadline.
import Hummingbird
import NIOCore

enum RequestBodyCollector {
    enum BodyRead: Sendable {
        case complete([UInt8])
        case tooLarge
        case timedOut
    }

    /// The whole body, unless it is over `limit` (checked against Content-Length first, then while
    /// reading, so an oversized body is never held) or has not fully arrived within `deadline` (a slow
    /// client trickling bytes would otherwise hold the request for as long as it likes). A body left
    /// unread is abandoned: its stream ends, and so does the connection, instead of being drained.
    static func collect(_ request: Request, limit: Int, deadline: Duration) async throws -> BodyRead {
        let body = request.body
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        return try await withThrowingTaskGroup(of: BodyRead.self) { group in
            group.addTask {
                if let declared, declared > limit { return .tooLarge }
                var bytes: [UInt8] = []
                bytes.reserveCapacity(min(declared ?? 4096, limit))
                for try await buffer in body {
                    guard bytes.count + buffer.readableBytes <= limit else { return .tooLarge }
                    bytes.append(contentsOf: buffer.readableBytesView)
                }
                return .complete(bytes)
            }
            group.addTask {
                try await Task.sleep(for: deadline)
                return .timedOut
            }
            let first = try await group.next()!
            group.cancelAll()
            return first
        }
    }
}
