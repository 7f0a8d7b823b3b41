-- Monthly revenue per category
WITH paid AS (
	SELECT o.id, o.created_at, oi.product_id, oi.quantity * oi.unit_price AS amount
	FROM orders o
	JOIN order_items oi ON oi.order_id = o.id
	WHERE o.status IN ('paid', 'shipped')
)
SELECT
	date_trunc('month', p.created_at) AS month,
	c.name AS category,
	sum(p.amount) AS revenue,
	count(DISTINCT p.id) AS orders
FROM paid p
JOIN products pr ON pr.id = p.product_id
JOIN categories c ON c.id = pr.category_id
WHERE p.created_at >= now() - interval '12 months'
GROUP BY 1, 2
ORDER BY 1, 3 DESC;
