//! What a call returns, against docs/semantics.md (CPU backend).

mod common;

use common::{argmax, bf16_bits, cpu, f16_bits, run, Rng};
use tokensift::{
    Algo, Config, DType, Logits, Outputs, RawLogits, RawOutputs, RowStatus, Sampler, SamplingParams,
};

const NINF: f32 = f32::NEG_INFINITY;

/// (a) Greedy rows: the largest logit, ties to the lowest index; the
/// filters are ignored; kept count 1, logprob 0.  `T < 1e-5` is greedy,
/// `T = 2e-5` is not.
#[test]
fn greedy_takes_the_lowest_index_among_ties() {
    let mut s = cpu();
    let cases: [(&[f32], i32); 7] = [
        (&[1.0, 5.0, 3.0, 5.0, 5.0], 1),
        (&[-0.0, 0.0, -1.0], 0), // -0.0 and +0.0 are equal: index rule
        (&[0.0, -0.0, 0.0], 0),
        (&[NINF, NINF, 2.0, 2.0], 2),
        (&[7.0], 0),
        (&[-3.0, -2.0, -1.0, -1.5], 2),
        (&[-1e30, NINF, -1e30, -2e30], 0),
    ];
    for (row, want) in cases {
        for t in [0.0f32, 5e-6] {
            let p = SamplingParams::greedy()
                .temperature(t)
                .top_k(2)
                .top_p(0.3)
                .min_p(0.5)
                .seed(9);
            let out = run(&mut s, &Logits::f32(row, 1, row.len()), &p);
            assert_eq!(out.tokens, [want], "row {row:?}, T = {t}");
            assert_eq!(out.status, [RowStatus::Ok]);
            assert_eq!((out.kept[0], out.logprobs[0]), (1, 0.0));
        }
    }

    // Random rows over a few values, so most rows have ties at the maximum.
    let (rows, vocab) = (200usize, 257usize);
    let mut rng = Rng::new(1);
    let logits: Vec<f32> = (0..rows * vocab)
        .map(|_| rng.below(6) as f32 - 3.0)
        .collect();
    let want: Vec<i32> = logits.chunks(vocab).map(argmax).collect();
    assert!(
        want.iter().any(|&t| t > 0),
        "the data should not always put the max first"
    );
    let seeds: Vec<u64> = (0..rows as u64).collect();
    let greedy = SamplingParams::greedy().seed_per_row(&seeds).top_k(3);
    let out = run(&mut s, &Logits::f32(&logits, rows, vocab), &greedy);
    assert_eq!(out.tokens, want);
    assert!(out.kept.iter().all(|&k| k == 1));

    // Just above the floor the rows sample: the kept set is every token.
    let out = run(
        &mut s,
        &Logits::f32(&logits, rows, vocab),
        &greedy.temperature(2e-5).top_k(0),
    );
    assert!(
        out.kept.iter().all(|&k| k == vocab as i32),
        "T = 2e-5 is a sampling temperature"
    );
}

/// (b) Same inputs, seed and offset: the same results, whatever the
/// thread count or algorithm; another offset or seed changes most tokens.
#[test]
fn determinism_and_the_offset() {
    let (rows, vocab) = (256usize, 1000usize);
    let mut rng = Rng::new(2);
    let logits = rng.logits(rows * vocab, 1.5);
    let seeds: Vec<u64> = (0..rows).map(|_| rng.next_u64()).collect();
    let l = Logits::f32(&logits, rows, vocab);
    let p = SamplingParams::new()
        .temperature(0.9)
        .seed_per_row(&seeds)
        .offset(17);

    let mut s = cpu();
    let first = run(&mut s, &l, &p);
    assert!(first.status.iter().all(|&st| st == RowStatus::Ok));
    run(&mut s, &l, &p).assert_same(&first, "second call");
    for (threads, algo) in [(1, Algo::Pivot), (2, Algo::Sort), (3, Algo::Auto)] {
        let mut other = Sampler::new(Config::cpu().num_threads(threads).algo(algo)).unwrap();
        run(&mut other, &l, &p).assert_same(&first, &format!("{threads} threads, {algo:?}"));
    }

    // With these logits no token has more than a few percent of the mass, so
    // an independent draw repeats a token rarely: nearly every row changes.
    let next_step = run(&mut s, &l, &p.offset(18));
    let changed = (0..rows)
        .filter(|&r| next_step.tokens[r] != first.tokens[r])
        .count();
    assert!(
        changed >= rows * 3 / 4,
        "offset 17 -> 18 changed {changed} of {rows} tokens"
    );
    let other_seeds: Vec<u64> = seeds.iter().map(|s| s ^ 1).collect();
    let reseeded = run(&mut s, &l, &p.seed_per_row(&other_seeds));
    let changed = (0..rows)
        .filter(|&r| reseeded.tokens[r] != first.tokens[r])
        .count();
    assert!(
        changed >= rows * 3 / 4,
        "new seeds changed {changed} of {rows} tokens"
    );

    // Rows with the same logits, parameters, seed and offset agree.
    let mut twice = logits[..vocab].to_vec();
    twice.extend_from_slice(&logits[..vocab]);
    let out = run(&mut s, &Logits::f32(&twice, 2, vocab), &p.seed(seeds[0]));
    assert_eq!(out.tokens[0], out.tokens[1]);
    assert_eq!(out.tokens[0], first.tokens[0]);
}

/// (c) A row's result is the same alone and at any position of batches of
/// any size, with any row stride.
#[test]
fn batch_invariance() {
    let vocab = 1000usize;
    let mut rng = Rng::new(3);
    let probe = rng.logits(vocab, 2.0);
    let (seed, offset) = (0xfeed_beef_u64, 41u64);
    let mut s = cpu();
    let base = SamplingParams::new()
        .temperature(0.8)
        .top_p(0.9)
        .min_p(0.01);
    let alone = run(
        &mut s,
        &Logits::f32(&probe, 1, vocab),
        &base.seed(seed).offset(offset),
    );

    for rows in [2usize, 7, 33] {
        for pos in [0, rows / 2, rows - 1] {
            for stride in [vocab, vocab + 5] {
                let mut logits = rng.logits(rows * stride, 2.0);
                logits[pos * stride..pos * stride + vocab].copy_from_slice(&probe);
                let mut seeds: Vec<u64> = (0..rows).map(|_| rng.next_u64()).collect();
                let mut offsets: Vec<u64> = (0..rows).map(|_| rng.below(100)).collect();
                seeds[pos] = seed;
                offsets[pos] = offset;
                let p = base.seed_per_row(&seeds).offset_per_row(&offsets);
                let l = Logits::f32(&logits, rows, vocab).with_row_stride(stride);
                let out = run(&mut s, &l, &p);
                out.row(pos).assert_same(
                    &alone,
                    &format!("rows {rows}, position {pos}, stride {stride}"),
                );
            }
        }
    }

    // Every row of one batch against the same row sampled alone.
    let (rows, stride) = (37usize, vocab + 3);
    let logits = rng.logits(rows * stride, 2.0);
    let seeds: Vec<u64> = (0..rows).map(|_| rng.next_u64()).collect();
    let batch = run(
        &mut s,
        &Logits::f32(&logits, rows, vocab).with_row_stride(stride),
        &base.seed_per_row(&seeds),
    );
    for r in 0..rows {
        let row = &logits[r * stride..r * stride + vocab];
        let one = run(&mut s, &Logits::f32(row, 1, vocab), &base.seed(seeds[r]));
        batch.row(r).assert_same(&one, &format!("row {r}"));
    }
}

/// (d) Per-row parameter slices give what separate calls with those values
/// as scalars give.
#[test]
fn per_row_slices_equal_scalar_calls() {
    let (rows, vocab) = (48usize, 500usize);
    let mut rng = Rng::new(4);
    let logits = rng.logits(rows * vocab, 2.5);
    let pick = |rng: &mut Rng, xs: &[f32]| xs[rng.below(xs.len() as u64) as usize];
    let temperature: Vec<f32> = (0..rows)
        .map(|_| pick(&mut rng, &[0.0, 0.5, 1.0, 1.7]))
        .collect();
    let min_p: Vec<f32> = (0..rows)
        .map(|_| pick(&mut rng, &[0.0, 0.05, 0.3]))
        .collect();
    let top_k: Vec<i32> = (0..rows)
        .map(|_| [0, 1, 5, 40][rng.below(4) as usize])
        .collect();
    let top_p: Vec<f32> = (0..rows)
        .map(|_| pick(&mut rng, &[1.0, 0.9, 0.5]))
        .collect();
    let seed: Vec<u64> = (0..rows).map(|_| rng.next_u64()).collect();
    let offset: Vec<u64> = (0..rows).map(|_| rng.next_u64()).collect();

    let mut s = cpu();
    let batch = run(
        &mut s,
        &Logits::f32(&logits, rows, vocab),
        &SamplingParams::new()
            .temperature_per_row(&temperature)
            .min_p_per_row(&min_p)
            .top_k_per_row(&top_k)
            .top_p_per_row(&top_p)
            .seed_per_row(&seed)
            .offset_per_row(&offset),
    );
    let mut distinct_kept = std::collections::BTreeSet::new();
    for r in 0..rows {
        let scalars = SamplingParams::new()
            .temperature(temperature[r])
            .min_p(min_p[r])
            .top_k(top_k[r])
            .top_p(top_p[r])
            .seed(seed[r])
            .offset(offset[r]);
        let one = run(
            &mut s,
            &Logits::f32(&logits[r * vocab..(r + 1) * vocab], 1, vocab),
            &scalars,
        );
        batch.row(r).assert_same(&one, &format!("row {r}"));
        distinct_kept.insert(one.kept[0]);
    }
    assert!(
        distinct_kept.len() > 5,
        "the parameters should give varied kept sets: {distinct_kept:?}"
    );

    // A per-row slice overrides the scalar; a later scalar setter drops it.
    let p = SamplingParams::new()
        .temperature(0.0)
        .temperature_per_row(&temperature);
    run(
        &mut s,
        &Logits::f32(&logits, rows, vocab),
        &p.seed_per_row(&seed)
            .offset_per_row(&offset)
            .min_p_per_row(&min_p)
            .top_k_per_row(&top_k)
            .top_p_per_row(&top_p),
    )
    .assert_same(&batch, "slice over scalar");
    let greedy = run(
        &mut s,
        &Logits::f32(&logits, rows, vocab),
        &p.temperature(0.0),
    );
    assert!(greedy.kept.iter().all(|&k| k == 1));
}

/// (e) top_k = 1 is greedy at any temperature and seed; on distinct logits
/// the kept count of a top-k row is exactly min(k, V) and the token is one
/// of the k largest.
#[test]
fn top_k_one_is_greedy_and_kept_counts_are_k() {
    let (rows, vocab) = (64usize, 300usize);
    let mut rng = Rng::new(5);
    // Half the rows have ties at the maximum.
    let mut logits = rng.logits(rows * vocab, 1.0);
    for r in (0..rows).step_by(2) {
        let row = &mut logits[r * vocab..(r + 1) * vocab];
        let m = row[argmax(row) as usize];
        let j = rng.below(vocab as u64) as usize;
        row[j] = m;
    }
    let l = Logits::f32(&logits, rows, vocab);
    let mut s = cpu();
    let greedy = run(&mut s, &l, &SamplingParams::greedy());
    for (t, seed) in [(1.0f32, 1u64), (1.3, 2), (0.2, 3)] {
        let out = run(
            &mut s,
            &l,
            &SamplingParams::new().temperature(t).top_k(1).seed(seed),
        );
        assert_eq!(out.tokens, greedy.tokens, "T = {t}");
        assert!(out.kept.iter().all(|&k| k == 1));
        assert!(out.logprobs.iter().all(|&lp| lp == 0.0));
    }

    // Distinct logits: a permutation of 0.01 * (0..V).
    let vocab = 512usize;
    let mut row: Vec<f32> = (0..vocab).map(|i| 0.01 * i as f32).collect();
    for i in (1..vocab).rev() {
        row.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut rank = vec![0usize; vocab];
    let mut order: Vec<usize> = (0..vocab).collect();
    order.sort_by(|&a, &b| row[b].total_cmp(&row[a]));
    for (r, &i) in order.iter().enumerate() {
        rank[i] = r;
    }
    let ks = [1i32, 2, 5, 50, 511, 512, 600];
    let rows = 200usize;
    let mut logits = Vec::with_capacity(rows * vocab);
    for _ in 0..rows {
        logits.extend_from_slice(&row);
    }
    let top_k: Vec<i32> = (0..rows).map(|r| ks[r % ks.len()]).collect();
    let seeds: Vec<u64> = (0..rows as u64).map(|r| r * 7919).collect();
    let out = run(
        &mut s,
        &Logits::f32(&logits, rows, vocab),
        &SamplingParams::new()
            .temperature(0.05)
            .top_k_per_row(&top_k)
            .seed_per_row(&seeds),
    );
    for (r, &k) in top_k.iter().enumerate() {
        let k = k as usize;
        assert_eq!(out.kept[r] as usize, k.min(vocab), "row {r}, k = {k}");
        let t = out.tokens[r] as usize;
        assert!(
            rank[t] < k,
            "row {r}: token {t} has rank {} with k = {k}",
            rank[t]
        );
    }
}

/// (g) A NaN row, a +inf row, an all -inf row and a row whose x / T
/// overflows report their status (token -1, kept 0, logprob NaN); the other
/// rows of the batch are what they are alone.
#[test]
fn bad_rows_report_their_status_and_leave_others_alone() {
    let vocab = 64usize;
    let mut rng = Rng::new(6);
    let mut rows: Vec<(Vec<f32>, f32, RowStatus)> = Vec::new();
    let good = |rng: &mut Rng| rng.logits(vocab, 1.0);
    rows.push((good(&mut rng), 1.0, RowStatus::Ok));
    let mut nan = good(&mut rng);
    nan[17] = f32::NAN;
    rows.push((nan.clone(), 1.0, RowStatus::NanInput));
    rows.push((nan, 0.0, RowStatus::NanInput)); // greedy too
    rows.push((good(&mut rng), 0.7, RowStatus::Ok));
    rows.push((vec![NINF; vocab], 1.0, RowStatus::NoValidToken));
    rows.push((vec![NINF; vocab], 0.0, RowStatus::NoValidToken));
    let mut pinf = good(&mut rng);
    pinf[3] = f32::INFINITY;
    rows.push((pinf, 1.0, RowStatus::NanInput));
    let mut big = good(&mut rng);
    big[40] = 3e38;
    rows.push((big.clone(), 0.5, RowStatus::NanInput)); // 3e38 / 0.5 overflows
    rows.push((big, 0.0, RowStatus::Ok)); // greedy does not divide
    let mut masked = good(&mut rng);
    for x in masked.iter_mut().step_by(2) {
        *x = NINF;
    }
    rows.push((masked, 1.0, RowStatus::Ok));
    rows.push((vec![-3e38, -2e38], 0.1, RowStatus::NoValidToken)); // every x / T underflows
                                                                   // That last row is shorter: pad it to vocab with -inf.
    rows.last_mut().unwrap().0.resize(vocab, NINF);

    let n = rows.len();
    let logits: Vec<f32> = rows
        .iter()
        .flat_map(|(x, _, _)| x.iter().copied())
        .collect();
    let temperature: Vec<f32> = rows.iter().map(|r| r.1).collect();
    let seeds: Vec<u64> = (0..n as u64).map(|r| 1000 + r).collect();
    let mut s = cpu();
    let p = SamplingParams::new()
        .temperature_per_row(&temperature)
        .seed_per_row(&seeds)
        .top_p(0.95);
    let out = run(&mut s, &Logits::f32(&logits, n, vocab), &p);
    for (r, (x, t, want)) in rows.iter().enumerate() {
        assert_eq!(out.status[r], *want, "row {r}");
        if *want == RowStatus::Ok {
            let one = run(
                &mut s,
                &Logits::f32(x, 1, vocab),
                &SamplingParams::new()
                    .temperature(*t)
                    .seed(seeds[r])
                    .top_p(0.95),
            );
            out.row(r).assert_same(&one, &format!("row {r}"));
            let tok = out.tokens[r] as usize;
            assert!(x[tok] > NINF, "row {r}: drew an ineligible token");
        } else {
            assert_eq!((out.tokens[r], out.kept[r]), (-1, 0), "row {r}");
            assert!(out.logprobs[r].is_nan(), "row {r}");
        }
    }
    assert_eq!(out.tokens[8], 40, "the greedy row with 3e38 takes it");
}

/// (h) bf16 and f16 logits (raw bits) give exactly what the same values as
/// f32 give, when those values are exactly representable.
#[test]
fn half_precision_input_equals_f32() {
    let (rows, vocab, stride) = (40usize, 777usize, 780usize);
    let mut rng = Rng::new(7);
    // Multiples of 1/8 in [-8, 8] (at most 7 significant bits) and some -inf.
    let mut values: Vec<f32> = (0..rows * stride)
        .map(|_| (rng.below(129) as f32 - 64.0) / 8.0)
        .collect();
    for _ in 0..200 {
        let i = rng.below(values.len() as u64) as usize;
        values[i] = NINF;
    }
    values[5 * stride + 9] = f32::NAN; // one bad row
    let bf16: Vec<u16> = values
        .iter()
        .map(|&x| if x.is_nan() { 0x7fc0 } else { bf16_bits(x) })
        .collect();
    let f16: Vec<u16> = values
        .iter()
        .map(|&x| if x.is_nan() { 0x7e00 } else { f16_bits(x) })
        .collect();

    let temperature: Vec<f32> = (0..rows).map(|r| [0.0, 0.6, 1.0, 1.4][r % 4]).collect();
    let top_k: Vec<i32> = (0..rows).map(|r| [0, 3, 50][r % 3]).collect();
    let seeds: Vec<u64> = (0..rows).map(|_| rng.next_u64()).collect();
    let p = SamplingParams::new()
        .temperature_per_row(&temperature)
        .top_k_per_row(&top_k)
        .top_p(0.8)
        .min_p(0.02)
        .seed_per_row(&seeds)
        .offset(3);

    let mut s = cpu();
    let want = run(
        &mut s,
        &Logits::f32(&values, rows, vocab).with_row_stride(stride),
        &p,
    );
    assert_eq!(want.status[5], RowStatus::NanInput);
    assert_eq!(
        want.status
            .iter()
            .filter(|&&st| st == RowStatus::Ok)
            .count(),
        rows - 1
    );
    let b = run(
        &mut s,
        &Logits::bf16(&bf16, rows, vocab).with_row_stride(stride),
        &p,
    );
    b.assert_same(&want, "bf16");
    let h = run(
        &mut s,
        &Logits::f16(&f16, rows, vocab).with_row_stride(stride),
        &p,
    );
    h.assert_same(&want, "f16");
    let h2 = run(
        &mut s,
        &Logits::half(&f16, DType::F16, rows, vocab).with_row_stride(stride),
        &p,
    );
    h2.assert_same(&want, "half(F16)");
    assert!(s.workspace_size(rows, vocab, DType::BF16).is_ok());
}

/// (j) The explicit-workspace call and the raw-pointer call (host pointers
/// on the CPU backend) give what the managed call gives; the internal
/// workspace grows with the shape and is reused.
#[test]
fn explicit_workspace_and_raw_pointers_agree() {
    let (rows, vocab) = (24usize, 2048usize);
    let mut rng = Rng::new(8);
    let logits = rng.logits(rows * vocab, 1.0);
    let seeds: Vec<u64> = (0..rows).map(|_| rng.next_u64()).collect();
    let p = SamplingParams::new()
        .temperature(1.1)
        .top_k(100)
        .top_p(0.9)
        .seed_per_row(&seeds)
        .offset(2);
    let l = Logits::f32(&logits, rows, vocab);

    let mut s = Sampler::new(Config::cpu().num_threads(2)).unwrap();
    assert_eq!(s.workspace_bytes(), 0);
    let want = run(&mut s, &l, &p);
    let need = s.workspace_size(rows, vocab, DType::F32).unwrap();
    assert!(need > 0, "the CPU backend uses scratch space");
    assert!(s.workspace_bytes() >= need);

    // Caller-owned workspace (any contents).
    let mut ws = vec![0xa5u8; need];
    let mut tokens = vec![0i32; rows];
    let mut kept = vec![0i32; rows];
    s.sample_with_workspace(
        &l,
        &p,
        Outputs::new(&mut tokens).kept_counts(&mut kept),
        &mut ws,
    )
    .unwrap();
    assert_eq!((&tokens, &kept), (&want.tokens, &want.kept));

    // Raw pointers: the device-memory entry point, fed host memory.
    let mut tokens = vec![0i32; rows];
    let mut logprobs = vec![0f32; rows];
    let raw_out = RawOutputs {
        logprobs: logprobs.as_mut_ptr(),
        ..RawOutputs::new(tokens.as_mut_ptr())
    };
    let raw_l = RawLogits::new(logits.as_ptr().cast(), rows, vocab, DType::F32);
    // SAFETY: host memory of the right sizes for a CPU sampler, alive and
    // unaliased for the call, which has finished when it returns.
    unsafe {
        s.workspace_init_raw(ws.as_mut_ptr().cast(), ws.len(), std::ptr::null_mut())
            .unwrap();
        s.sample_raw(
            &raw_l,
            &p.as_raw(),
            &raw_out,
            ws.as_mut_ptr().cast(),
            ws.len(),
            std::ptr::null_mut(),
        )
        .unwrap();
    }
    assert_eq!(tokens, want.tokens);
    assert_eq!(
        logprobs.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        want.logprobs
            .iter()
            .map(|x| x.to_bits())
            .collect::<Vec<_>>()
    );

    // A larger shape grows the internal workspace; a smaller one reuses it.
    let big = rng.logits(4 * rows * vocab * 2, 1.0);
    run(
        &mut s,
        &Logits::f32(&big, 4 * rows, 2 * vocab),
        &SamplingParams::new(),
    );
    let grown = s.workspace_bytes();
    assert!(grown >= s.workspace_size(4 * rows, 2 * vocab, DType::F32).unwrap());
    run(&mut s, &l, &p).assert_same(&want, "after growing");
    assert_eq!(s.workspace_bytes(), grown);

    // reserve() up front: sampling then never grows it.
    let mut r = cpu();
    r.reserve(rows, vocab, DType::F32).unwrap();
    let reserved = r.workspace_bytes();
    run(&mut r, &l, &p).assert_same(&want, "reserved");
    assert_eq!(r.workspace_bytes(), reserved);

    // Zero rows: nothing to do, nothing written.
    let mut none: [i32; 0] = [];
    s.sample(
        &Logits::f32(&[], 0, vocab),
        &p.seed(1),
        Outputs::new(&mut none),
    )
    .unwrap();
    assert_eq!(
        s.sample_tokens(&Logits::f32(&logits, 0, vocab), &SamplingParams::new())
            .unwrap(),
        Vec::<i32>::new()
    );
    assert_eq!(s.sample_tokens(&l, &p).unwrap(), want.tokens);
}

/// The Sampler is Send: created here, moved to a worker thread, used there.
#[test]
fn a_sampler_moves_to_another_thread() {
    let vocab = 100usize;
    let logits = Rng::new(9).logits(4 * vocab, 1.0);
    let p = SamplingParams::new().seed(5);
    let mut here = cpu();
    let want = run(&mut here, &Logits::f32(&logits, 4, vocab), &p);
    let logits2 = logits.clone();
    let (got, err) = std::thread::spawn(move || {
        let mut s = here;
        let got = run(
            &mut s,
            &Logits::f32(&logits2, 4, vocab),
            &SamplingParams::new().seed(5),
        );
        // An error on this thread carries this thread's message.
        let err = s
            .sample_tokens(
                &Logits::f32(&logits2, 4, vocab),
                &SamplingParams::new().top_p(2.0),
            )
            .unwrap_err();
        (got, err)
    })
    .join()
    .unwrap();
    got.assert_same(&want, "other thread");
    assert!(err.message().contains("top_p"), "{err}");
}
