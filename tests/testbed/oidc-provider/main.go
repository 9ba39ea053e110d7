// The test bed's OpenID Connect provider (issue 40): zitadel/oidc's example provider
// (github.com/zitadel/oidc/v3/example/server: in-memory storage, test users from a file, a
// login form), served with TLS on loopback, plus three test-only endpoints the example lacks:
//
//	POST /test/rotate    a new signing key becomes current; the old one stays in the JWKS
//	POST /test/drop-old  the JWKS keeps only the current key
//	POST /test/mint      signs the posted JSON claims with the current key (RS256, its kid),
//	                     for tokens the login cannot produce (expired, other audience ...)
//
// The TLS certificate is made at start from a fresh CA written to -ca-out. Loopback only.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/op"
)

type key struct {
	id  string
	rsa *rsa.PrivateKey
}

func (k *key) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *key) Algorithm() jose.SignatureAlgorithm          { return jose.RS256 }
func (k *key) ID() string                                  { return k.id }
func (k *key) Use() string                                 { return "sig" }

type privateKey struct{ *key }

func (k privateKey) Key() any { return k.rsa }

type publicKey struct{ *key }

func (k publicKey) Key() any { return &k.rsa.PublicKey }

// rotating is the example storage with signing keys that can be rotated.
type rotating struct {
	*storage.Storage
	mu   sync.Mutex
	keys []*key // the last is current
}

func newKey() *key {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		log.Fatal(err)
	}
	return &key{id: uuid.NewString(), rsa: k}
}

func (s *rotating) current() *key {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[len(s.keys)-1]
}

func (s *rotating) SigningKey(context.Context) (op.SigningKey, error) {
	return privateKey{s.current()}, nil
}

func (s *rotating) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *rotating) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]op.Key, 0, len(s.keys))
	for _, k := range s.keys {
		out = append(out, publicKey{k})
	}
	return out, nil
}

func (s *rotating) testRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /test/rotate", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.keys = append(s.keys, newKey())
		id := s.keys[len(s.keys)-1].id
		s.mu.Unlock()
		fmt.Fprintln(w, id)
	})
	mux.HandleFunc("POST /test/drop-old", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.keys = s.keys[len(s.keys)-1:]
		s.mu.Unlock()
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("POST /test/mint", func(w http.ResponseWriter, r *http.Request) {
		claims, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		k := s.current()
		opts := (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", k.id)
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: k.rsa}, opts)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		jws, err := signer.Sign(claims)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		out, _ := jws.CompactSerialize()
		fmt.Fprint(w, out)
	})
}

// serving makes a CA (written to caOut) and a certificate for 127.0.0.1 and localhost.
func serving(caOut string) tls.Certificate {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	caTpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test OIDC provider CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTpl, caTpl, &caKey.PublicKey, caKey)
	if err != nil {
		log.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(48 * time.Hour), DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(caOut, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		log.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to serve on")
	users := flag.String("users", "", "users file (the example's JSON format)")
	clients := flag.String("clients", "paddock", "comma-separated native (public, PKCE) client ids")
	redirects := flag.String("redirect-uris", "http://localhost:8000,http://127.0.0.1:8000", "comma-separated redirect URIs")
	caOut := flag.String("ca-out", "ca.crt", "where to write the CA certificate")
	addrOut := flag.String("addr-out", "", "where to write the issuer URL once listening")
	flag.Parse()

	if !strings.HasPrefix(*listen, "127.") && !strings.HasPrefix(*listen, "[::1]") {
		log.Fatal("-listen must be a loopback address")
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	issuer := fmt.Sprintf("https://%s/", ln.Addr().String())
	var natives []*storage.Client
	for _, id := range strings.Split(*clients, ",") {
		natives = append(natives, storage.NativeClient(id, strings.Split(*redirects, ",")...))
	}
	storage.RegisterClients(natives...)
	userStore, err := storage.StoreFromFile(*users)
	if err != nil {
		log.Fatal(err)
	}
	st := &rotating{Storage: storage.NewStorage(userStore), keys: []*key{newKey()}}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	router := exampleop.SetupServer(issuer, st, logger, false)
	mux := http.NewServeMux()
	st.testRoutes(mux)
	mux.Handle("/", router)
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{serving(*caOut)}},
		ReadHeaderTimeout: 10 * time.Second}
	if *addrOut != "" {
		if err := os.WriteFile(*addrOut, []byte(issuer), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	logger.Info("OIDC provider listening", "issuer", issuer)
	log.Fatal(srv.ServeTLS(ln, "", ""))
}
