/* The release's floor (.ci/dist links this object into every shipped file; .ci/FLOOR states the floor and
 * .ci/dist-check checks it). Built on Debian 12 (glibc 2.36, GCC 12's libstdc++), the Swift runtime that is
 * linked in references three symbols at versions newer than glibc 2.34 and GCC 11's libstdc++, where
 * RHEL 9, Rocky 9 and Amazon Linux 2023 stop: hypot and hypotf (libm, GLIBC_2.35, from the Float and
 * Double math of the runtime) and std::condition_variable::wait (libstdc++, GLIBCXX_3.4.30, from
 * Dispatch and the concurrency runtime). Each is defined here as a call of the same function at its older
 * version, which every glibc and libstdc++ since still export: a reference resolved by this definition
 * never reaches the dynamic symbol table. The implementations are the same functions: glibc 2.35 gave
 * hypot a new version when it dropped the SVID error handling (_LIB_VERSION), and GCC 12 gave
 * condition_variable::wait one when it moved to the new pthread_cond ABI; both old versions keep the
 * results and the blocking behaviour the runtime relies on. No header: the declarations must not clash. */

__asm__(".symver applepay_hypot_2_2_5, hypot@GLIBC_2.2.5");
__asm__(".symver applepay_hypotf_2_2_5, hypotf@GLIBC_2.2.5");
__asm__(".symver applepay_cv_wait_3_4_11, _ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE@GLIBCXX_3.4.11");

double applepay_hypot_2_2_5(double, double);
float applepay_hypotf_2_2_5(float, float);
void applepay_cv_wait_3_4_11(void *, void *);

double hypot(double x, double y) { return applepay_hypot_2_2_5(x, y); }
float hypotf(float x, float y) { return applepay_hypotf_2_2_5(x, y); }
/* std::condition_variable::wait(std::unique_lock<std::mutex>&): a member function, `this` first. */
void _ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE(void *self, void *lock) {
    applepay_cv_wait_3_4_11(self, lock);
}
