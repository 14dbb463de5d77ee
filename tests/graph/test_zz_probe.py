import time
def test_probe(db):
    with db.connect() as conn:
        for label, expr in [("require_text", "memsub._require_text('  name ' || i, 'f')"),
                            ("optional_text", "memsub._optional_text(' name ' || i)")]:
            best = 9e9
            for _ in range(5):
                t = time.perf_counter()
                conn.execute(f"select count({expr}) from generate_series(1, 100000) i")
                best = min(best, time.perf_counter() - t)
            print(label, round(best / 100000 * 1e6, 3), "us")
