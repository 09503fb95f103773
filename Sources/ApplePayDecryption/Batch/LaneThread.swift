// A detached thread running one closure: the batch lanes' threads, without Foundation's Thread.
#if canImport(FoundationEssentials)
    import Glibc
#else
    import Foundation
#endif

/// Starts lane threads. On Linux a POSIX thread (FoundationEssentials has no `Thread`, and the
/// shipped library links no Foundation); elsewhere Foundation's `Thread`.
enum LaneThread {
    /// Runs `body` on a new detached thread with the system's default stack size (as `Thread` does).
    static func start(_ body: @escaping @Sendable () -> Void) {
        #if canImport(FoundationEssentials)
            let context = Unmanaged.passRetained(Body(body)).toOpaque()
            var attributes = pthread_attr_t()
            pthread_attr_init(&attributes)
            defer { pthread_attr_destroy(&attributes) }
            pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
            var thread = pthread_t()
            let status = pthread_create(
                &thread, &attributes,
                { context in
                    Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
                    return nil
                }, context)
            // A lane that cannot start would leave the window's continuation waiting for ever.
            precondition(status == 0, "pthread_create failed (\(status))")
        #else
            Thread { body() }.start()
        #endif
    }

    /// The closure, retained across pthread_create's untyped context pointer.
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}
