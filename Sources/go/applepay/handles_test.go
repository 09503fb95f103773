// Issue 22 from Go: a freed handle never comes back to life. A stale raw handle is refused after a
// new object of the same type was made (on the old code glibc gave it the freed address and it
// answered as live); Free clears the handle, a second Free and the finalizer do nothing more.
package applepay

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

func handleFixture(t *testing.T) (func() *Decryptor, []byte) {
	vectors := filepath.Join(root, "Vectors")
	key, rootPEM := read(t, vectors, "merchants", "ec.key.pem"), read(t, vectors, "trust", "test-root.pem")
	token := read(t, vectors, "tokens", "ec-3dsecure.json")
	return func() *Decryptor {
		d, err := NewDecryptor([]Merchant{IdentifierMerchant("merchant.com.example.vectors", key)}, Options{InsecureTestRootPEM: rootPEM})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}, token
}

func TestAStaleResultHandleIsRefusedAfterTheNextResultIsMade50Rounds(t *testing.T) {
	newDecryptor, token := handleFixture(t)
	d := newDecryptor()
	defer d.Free()
	for round := 0; round < 50; round++ {
		_, a := d.Decrypt(token, ReferenceSigningTime)
		stale := resultFromRaw(a.Raw())
		a.Free()
		code, b := d.Decrypt(token, ReferenceSigningTime)
		if code != OK {
			t.Fatalf("round %d: %v", round, code)
		}
		if stale.Code() != InvalidHandle || stale.PaymentJSON() != nil || stale.Message() != nil || stale.Free() != InvalidHandle {
			t.Errorf("round %d: a freed result answered as live", round)
		}
		if b.Code() != OK {
			t.Errorf("round %d: freeing the stale handle freed the live result", round)
		}
		b.Free()
	}
}

// A new decryptor rarely lands on the one just freed (making the engine allocates first) but often on
// an earlier one: each round checks every decryptor handle freed so far.
func TestEveryFreedDecryptorHandleStaysRefusedOver50Rounds(t *testing.T) {
	newDecryptor, token := handleFixture(t)
	var stale []*Decryptor
	for round := 0; round < 50; round++ {
		d := newDecryptor()
		for i, s := range stale {
			if code, r := s.Decrypt(token, ReferenceSigningTime); code != InvalidHandle || r != nil {
				t.Errorf("round %d: the decryptor freed in round %d decrypted: %v", round, i, code)
			}
			if code := decryptorFromRaw(s.Raw()).Free(); code != InvalidHandle {
				t.Errorf("round %d: freeing the decryptor freed in round %d gave %v", round, i, code)
			}
		}
		// A token that fails at once shows d is live without the first decryption's set-up cost.
		code, r := d.Decrypt([]byte("{}"), ReferenceSigningTime)
		if code != MalformedToken {
			t.Errorf("round %d: freeing a stale handle freed the live decryptor: %v", round, code)
		}
		if r != nil {
			r.Free()
		}
		stale = append(stale, decryptorFromRaw(d.Raw()))
		d.Free()
	}
}

func TestFreeClearsTheHandleAndFinalizersNeverFreeTwice(t *testing.T) {
	newDecryptor, token := handleFixture(t)
	d := newDecryptor()
	raw := d.Raw()
	if d.Free() != OK || d.Free() != OK || d.Raw() != nil {
		t.Fatal("Free must clear the decryptor's handle; a second Free does nothing")
	}
	if code, _ := d.Decrypt(token, ReferenceSigningTime); code != InvalidHandle {
		t.Errorf("a freed decryptor gave %v", code)
	}
	if decryptorFromRaw(raw).Free() != InvalidHandle {
		t.Error("the library still knew the freed decryptor")
	}
	d = newDecryptor()
	defer d.Free()
	// Results dropped without Free are freed by their finalizers; freed ones are not freed again
	// (their handle is cleared), which the library would report as InvalidHandle on a raw copy.
	var dropped []*Result
	for i := 0; i < 20; i++ {
		_, r := d.Decrypt(token, ReferenceSigningTime)
		dropped = append(dropped, resultFromRaw(r.Raw()))
		if i%2 == 0 {
			r.Free()
		}
	}
	// Finalizers run on their own goroutine after a collection: give them a moment.
	for try := 0; try < 100; try++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		if dropped[len(dropped)-1].Code() == InvalidHandle && dropped[1].Code() == InvalidHandle {
			break
		}
	}
	for i, r := range dropped {
		if r.Code() != InvalidHandle {
			t.Errorf("result %d was neither freed nor finalized", i)
		}
	}
}

func TestGoroutinesFreeingAndUsingOneResultSeeOnlyLiveOrFreed(t *testing.T) {
	newDecryptor, token := handleFixture(t)
	d := newDecryptor()
	defer d.Free()
	for round := 0; round < 50; round++ {
		_, r := d.Decrypt(token, ReferenceSigningTime)
		var wg sync.WaitGroup
		var wrong sync.Map
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 100; i++ {
					if g == 0 && i == 50 {
						if c := r.Free(); c != OK {
							wrong.Store(c, true)
						}
					}
					if c := r.Code(); c != OK && c != InvalidHandle {
						wrong.Store(c, true)
					}
				}
			}(g)
		}
		wg.Wait()
		wrong.Range(func(k, _ any) bool { t.Errorf("round %d: code %v", round, k); return true })
		if r.Raw() != nil || r.Code() != InvalidHandle {
			t.Errorf("round %d: the result is still live after Free", round)
		}
	}
}

// A Free in one goroutine must never release memory another goroutine is copying (before the result's
// lock, PaymentJSON and Message could copy freed memory: only the finalizer was held off).
func TestAFreeInOneGoroutineNeverHandsAnotherFreedMemory(t *testing.T) {
	newDecryptor, token := handleFixture(t)
	d := newDecryptor()
	defer d.Free()
	_, first := d.Decrypt(token, ReferenceSigningTime)
	payment, message := string(first.PaymentJSON()), *first.Message()
	first.Free()
	for round := 0; round < 300; round++ {
		_, r := d.Decrypt(token, ReferenceSigningTime)
		var wg sync.WaitGroup
		var bad sync.Map
		for g := 0; g < 3; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				if g == 0 {
					r.Free()
					return
				}
				for i := 0; i < 50; i++ {
					if p := r.PaymentJSON(); p != nil && string(p) != payment {
						bad.Store(fmt.Sprintf("a payment JSON of %d bytes that is not the result's", len(p)), true)
					}
					if m := r.Message(); m != nil && *m != message {
						bad.Store(fmt.Sprintf("a message of %d bytes that is not the result's", len(*m)), true)
					}
				}
			}(g)
		}
		wg.Wait()
		bad.Range(func(k, _ any) bool { t.Errorf("round %d: read freed memory: %v", round, k); return true })
	}
}
