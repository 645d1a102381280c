CREATE SEQUENCE "public"."support_ticket_number_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1;--> statement-breakpoint
CREATE TABLE "api_keys" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"name" text NOT NULL,
	"prefix" text NOT NULL,
	"key_hash" text NOT NULL,
	"scopes" text[] NOT NULL,
	"created_by" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp with time zone,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "memberships" (
	"org_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"role" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "organizations" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"parent_id" uuid,
	"is_demo" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "users" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"email" text NOT NULL,
	"name" text,
	"password_hash" text,
	"email_verified" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "billing_cost_summaries" (
	"org_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"billing_account_id" text NOT NULL,
	"month" date NOT NULL,
	"grain" text NOT NULL,
	"currency" text NOT NULL,
	"account_id" text,
	"account_name" text,
	"service_category" text,
	"service_name" text,
	"day" date,
	"ondemand_cost" numeric NOT NULL,
	"commitment_cost" numeric NOT NULL,
	"other_cost" numeric NOT NULL,
	"total_cost" numeric NOT NULL,
	"billed_cost" numeric NOT NULL
);
--> statement-breakpoint
CREATE TABLE "billing_imports" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"file_name" text NOT NULL,
	"rows_imported" integer DEFAULT 0 NOT NULL,
	"rows_rejected" integer DEFAULT 0 NOT NULL,
	"content_digest" text,
	"superseded_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "billing_line_items" (
	"org_id" uuid NOT NULL,
	"import_id" uuid,
	"provider" text NOT NULL,
	"billing_account_id" text NOT NULL,
	"billing_account_name" text,
	"sub_account_id" text,
	"sub_account_name" text,
	"billing_currency" text DEFAULT 'USD' NOT NULL,
	"billing_period" date NOT NULL,
	"charge_period_start" timestamp with time zone NOT NULL,
	"charge_period_end" timestamp with time zone NOT NULL,
	"charge_category" text NOT NULL,
	"charge_class" text,
	"charge_frequency" text,
	"charge_description" text,
	"billed_cost" numeric(30, 10) NOT NULL,
	"effective_cost" numeric(30, 10) NOT NULL,
	"list_cost" numeric(30, 10),
	"contracted_cost" numeric(30, 10),
	"pricing_category" text,
	"pricing_quantity" numeric(30, 10),
	"pricing_unit" text,
	"consumed_quantity" numeric(30, 10),
	"consumed_unit" text,
	"commitment_discount_id" text,
	"commitment_discount_category" text,
	"commitment_discount_type" text,
	"commitment_discount_status" text,
	"commitment_discount_name" text,
	"commitment_discount_quantity" numeric(30, 10),
	"commitment_discount_unit" text,
	"region_id" text,
	"region_name" text,
	"service_category" text,
	"service_name" text,
	"resource_id" text,
	"resource_type" text,
	"sku_id" text,
	"sku_price_id" text,
	"instance_type" text,
	"tags" jsonb,
	"extra" jsonb
);
--> statement-breakpoint
CREATE TABLE "billing_periods" (
	"org_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"month" date NOT NULL,
	"status" text DEFAULT 'open' NOT NULL,
	"closed_at" timestamp with time zone,
	"frozen_at" timestamp with time zone,
	"frozen_reports" text[]
);
--> statement-breakpoint
CREATE TABLE "cloud_accounts" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"account_id" text NOT NULL,
	"name" text,
	"billing_account_id" text,
	"billing_account_name" text,
	"child_org_id" uuid,
	"first_seen_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "commitment_usage_summaries" (
	"org_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"billing_account_id" text NOT NULL,
	"month" date NOT NULL,
	"grain" text NOT NULL,
	"currency" text NOT NULL,
	"commitment_id" text NOT NULL,
	"account_id" text,
	"service_name" text,
	"day" date,
	"used_cost" numeric NOT NULL,
	"unused_cost" numeric NOT NULL,
	"covered_ondemand_cost" numeric NOT NULL,
	"savings" numeric NOT NULL
);
--> statement-breakpoint
CREATE TABLE "commitments" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"provider_commitment_id" text NOT NULL,
	"name" text,
	"commitment_type" text NOT NULL,
	"category" text,
	"contract_term" text,
	"payment_option" text,
	"offering_class" text,
	"region" text,
	"instance_type" text,
	"instance_family" text,
	"starts_at" timestamp with time zone,
	"ends_at" timestamp with time zone,
	"amount" numeric(30, 10),
	"upfront_cost" numeric(30, 10),
	"recurring_hourly_cost" numeric(30, 10),
	"holding_account_id" text,
	"insured" boolean DEFAULT false NOT NULL,
	"fee_rate" numeric(30, 10),
	"lock_in_ends_at" timestamp with time zone,
	"source" text DEFAULT 'billing' NOT NULL,
	"provider_state" text,
	"reconciled_at" timestamp with time zone,
	"purchase_id" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "catalog_feeds" (
	"feed" text PRIMARY KEY NOT NULL,
	"provider" text NOT NULL,
	"version" text,
	"etag" text,
	"checked_at" timestamp with time zone,
	"changed_at" timestamp with time zone,
	"last_error" text,
	"last_error_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "catalog_refresh_lease" (
	"name" text PRIMARY KEY NOT NULL,
	"holder" text,
	"lease_until" timestamp with time zone,
	"run_date" text,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "catalog_seed_state" (
	"name" text PRIMARY KEY NOT NULL,
	"version" text NOT NULL,
	"applied_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "catalog_skus" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"catalog_sku_org_id" text NOT NULL,
	"provider" text NOT NULL,
	"provider_sku_id" text NOT NULL,
	"display_name" text NOT NULL,
	"instance_type" text DEFAULT '' NOT NULL,
	"instance_family" text DEFAULT '' NOT NULL,
	"service" text DEFAULT '' NOT NULL,
	"provider_service" text DEFAULT '' NOT NULL,
	"region_code" text DEFAULT '' NOT NULL,
	"operating_system" text DEFAULT '' NOT NULL,
	"database_engine" text DEFAULT '' NOT NULL,
	"cache_engine" text DEFAULT '' NOT NULL,
	"usage_type" text DEFAULT '' NOT NULL,
	"usage_unit" text DEFAULT 'Hrs' NOT NULL,
	"is_available" boolean DEFAULT true NOT NULL,
	"source" text NOT NULL,
	"feed" text NOT NULL,
	"as_of" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "lease_menu_items" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"offer_id" uuid NOT NULL,
	"catalog_sku_id" uuid NOT NULL,
	"recurring_hourly_rate" numeric(30, 12) NOT NULL,
	"upfront_cost" numeric(30, 12) NOT NULL,
	"is_available" boolean DEFAULT true NOT NULL,
	"source" text NOT NULL,
	"feed" text NOT NULL,
	"as_of" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "offers" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"offer_org_id" text NOT NULL,
	"provider" text NOT NULL,
	"offer_key" text NOT NULL,
	"commitment_type" text NOT NULL,
	"contract_term" text NOT NULL,
	"payment_option" text NOT NULL,
	"offering_class" text,
	"plan_type" text,
	"duration_seconds" integer NOT NULL,
	"region" text,
	"instance_type" text,
	"instance_family" text,
	"product_description" text,
	"display_name" text NOT NULL,
	"guaranteed_display_name" text,
	"is_flexible" boolean DEFAULT false NOT NULL,
	"fee_rate" numeric(30, 12) DEFAULT '0' NOT NULL,
	"lock_in_days" integer NOT NULL,
	"is_insured" boolean DEFAULT false NOT NULL,
	"is_available" boolean DEFAULT true NOT NULL,
	"source" text NOT NULL,
	"feed" text NOT NULL,
	"as_of" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sku_price_tiers" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"catalog_sku_id" uuid NOT NULL,
	"start_quantity" numeric(30, 12) NOT NULL,
	"end_quantity" numeric(30, 12),
	"unit_price" numeric(30, 12) NOT NULL,
	"source" text NOT NULL,
	"as_of" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "cost_estimates" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"source_draft_id" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "estimate_line_items" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"seq" bigserial NOT NULL,
	"estimate_id" uuid NOT NULL,
	"org_id" uuid NOT NULL,
	"catalog_sku_id" uuid NOT NULL,
	"catalog_sku_org_id" text NOT NULL,
	"sku_snapshot" jsonb NOT NULL,
	"usage_unit" text,
	"label" text,
	"quantity" numeric(30, 10) NOT NULL,
	"quantity_basis" text NOT NULL,
	"is_enabled" boolean DEFAULT true NOT NULL,
	"selected_commitment_option" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "estimate_shares" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"estimate_id" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "oauth_clients" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"redirect_uris" text[] NOT NULL,
	"grant_types" text[] NOT NULL,
	"scope" text,
	"client_uri" text,
	"software_id" text,
	"software_version" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "oauth_codes" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"code_hash" text NOT NULL,
	"client_id" text NOT NULL,
	"user_id" uuid NOT NULL,
	"org_id" uuid NOT NULL,
	"session_id" uuid,
	"redirect_uri" text NOT NULL,
	"code_challenge" text NOT NULL,
	"scopes" text[] NOT NULL,
	"resource" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "oauth_login_failures" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"email" text NOT NULL,
	"ip" text NOT NULL,
	"created_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "oauth_sessions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"session_hash" text NOT NULL,
	"user_id" uuid NOT NULL,
	"method" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "oauth_tokens" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"kind" text NOT NULL,
	"token_hash" text NOT NULL,
	"family_id" uuid NOT NULL,
	"client_id" text NOT NULL,
	"user_id" uuid NOT NULL,
	"org_id" uuid NOT NULL,
	"session_id" uuid,
	"scopes" text[] NOT NULL,
	"resource" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "oauth_upstream_states" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"state_hash" text NOT NULL,
	"browser_hash" text NOT NULL,
	"code_verifier" text NOT NULL,
	"nonce" text NOT NULL,
	"return_query" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "commitment_plan_items" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"plan_id" uuid NOT NULL,
	"org_id" uuid NOT NULL,
	"group_key" text NOT NULL,
	"offer_id" text,
	"lease_menu_item_id" text,
	"commitment_type" text NOT NULL,
	"contract_term" text NOT NULL,
	"payment_option" text NOT NULL,
	"region" text,
	"instance_type" text,
	"units" numeric(30, 10) NOT NULL,
	"amount" numeric(30, 10) NOT NULL,
	"upfront_cost" numeric(30, 10) NOT NULL,
	"monthly_cost" numeric(30, 10) NOT NULL,
	"monthly_net_savings" numeric(30, 10) NOT NULL,
	"expected_coverage" numeric(12, 8) NOT NULL,
	"expected_utilization" numeric(12, 8) NOT NULL,
	"duration_seconds" integer NOT NULL,
	"fee_rate" numeric(30, 10) DEFAULT '0' NOT NULL,
	"lock_in_days" integer
);
--> statement-breakpoint
CREATE TABLE "commitment_plan_templates" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"segment_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"is_system_generated" boolean DEFAULT false NOT NULL,
	"system_kind" text,
	"sort_order" integer DEFAULT 100 NOT NULL,
	"max_upfront_cost" numeric(30, 10) NOT NULL,
	"lookback_days" integer NOT NULL,
	"contract_specs" jsonb NOT NULL,
	"resource_ids" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"renewal_commitment_ids" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"schedule" text,
	"min_monthly_savings" numeric(30, 10),
	"auto_purchase_enabled" boolean,
	"require_approval" boolean,
	"auto_approve_max_upfront" numeric(30, 10),
	"start_date" date,
	"end_date" date,
	"schedule_set_on" date,
	"last_execution_date" date,
	"last_executed_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"version" integer DEFAULT 1 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "commitment_plans" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"segment_id" uuid,
	"template_id" uuid,
	"cost_estimate_id" uuid,
	"execution_date" date,
	"status" text DEFAULT 'generated' NOT NULL,
	"status_reason" text,
	"lookback_days" integer NOT NULL,
	"usage_from" timestamp with time zone,
	"usage_to" timestamp with time zone,
	"total_upfront_cost" numeric(30, 10) NOT NULL,
	"monthly_cost" numeric(30, 10) NOT NULL,
	"monthly_net_savings" numeric(30, 10) NOT NULL,
	"max_upfront_cost" numeric(30, 10),
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "purchase_runs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"template_id" uuid NOT NULL,
	"execution_date" date NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"outcome" text,
	"plan_id" uuid,
	"purchase_id" uuid,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "purchases" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"template_id" uuid,
	"execution_date" date,
	"plan_id" uuid NOT NULL,
	"idempotency_key" text NOT NULL,
	"purchaser" text NOT NULL,
	"connection_id" uuid,
	"dry_run" boolean DEFAULT false NOT NULL,
	"status" text NOT NULL,
	"total_upfront_cost" numeric(30, 10) NOT NULL,
	"monthly_net_savings" numeric(30, 10) NOT NULL,
	"item_count" integer NOT NULL,
	"requires_approval" boolean DEFAULT false NOT NULL,
	"approval_expires_at" timestamp with time zone,
	"decided_by" text,
	"decided_at" timestamp with time zone,
	"decision_note" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "segments" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"kind" text NOT NULL,
	"name" text NOT NULL,
	"filters" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "support_daily_counts" (
	"org_id" uuid NOT NULL,
	"day" date NOT NULL,
	"count" integer NOT NULL,
	CONSTRAINT "support_daily_counts_org_id_day_pk" PRIMARY KEY("org_id","day")
);
--> statement-breakpoint
CREATE TABLE "support_tickets" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"number" bigint DEFAULT nextval('support_ticket_number_seq') NOT NULL,
	"org_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"user_id" uuid,
	"credential_id" text NOT NULL,
	"credential_kind" text NOT NULL,
	"summary" text NOT NULL,
	"user_verbatim" text NOT NULL,
	"what_happened" text,
	"steps_to_reproduce" text,
	"expected_behavior" text,
	"app_url" text,
	"provider" text,
	"problem" text,
	"desired_behavior" text,
	"business_value" text,
	"cap_day" date NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "org_report_settings" (
	"org_id" uuid NOT NULL,
	"report_type" text NOT NULL,
	"hidden" boolean DEFAULT false NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "org_report_settings_org_id_report_type_pk" PRIMARY KEY("org_id","report_type")
);
--> statement-breakpoint
CREATE TABLE "report_snapshots" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"org_id" uuid NOT NULL,
	"report_type" text NOT NULL,
	"provider" text NOT NULL,
	"month" date NOT NULL,
	"seq" integer NOT NULL,
	"row" jsonb NOT NULL,
	"frozen_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "billing_connection_periods" (
	"connection_id" uuid NOT NULL,
	"month" date NOT NULL,
	"fingerprint" text NOT NULL,
	"import_id" uuid,
	"rows" bigint DEFAULT 0 NOT NULL,
	"imported_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "billing_connection_periods_connection_id_month_pk" PRIMARY KEY("connection_id","month")
);
--> statement-breakpoint
CREATE TABLE "billing_connection_runs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"connection_id" uuid NOT NULL,
	"org_id" uuid NOT NULL,
	"trigger" text NOT NULL,
	"status" text DEFAULT 'queued' NOT NULL,
	"periods_seen" integer DEFAULT 0 NOT NULL,
	"periods_imported" integer DEFAULT 0 NOT NULL,
	"periods_unchanged" integer DEFAULT 0 NOT NULL,
	"rows_imported" bigint DEFAULT 0 NOT NULL,
	"bytes_read" bigint DEFAULT 0 NOT NULL,
	"error_cause" text,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "billing_connections" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"config" jsonb NOT NULL,
	"secret_ciphertext" text,
	"secret_key_id" text,
	"secret_fields" text[] DEFAULT '{}'::text[] NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"last_error" text,
	"last_error_cause" text,
	"consecutive_failures" integer DEFAULT 0 NOT NULL,
	"last_synced_at" timestamp with time zone,
	"next_sync_at" timestamp with time zone DEFAULT now() NOT NULL,
	"claimed_by" text,
	"claimed_until" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "purchase_events" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"purchase_id" uuid NOT NULL,
	"item_id" uuid,
	"event" text NOT NULL,
	"message" text NOT NULL,
	"detail" jsonb,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"notify" boolean DEFAULT false NOT NULL,
	"seq" integer GENERATED ALWAYS AS IDENTITY (sequence name "purchase_events_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 2147483647 START WITH 1 CACHE 1)
);
--> statement-breakpoint
CREATE TABLE "purchase_items" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"purchase_id" uuid NOT NULL,
	"position" integer NOT NULL,
	"provider" text NOT NULL,
	"connection_id" uuid,
	"status" text NOT NULL,
	"dry_run" boolean DEFAULT false NOT NULL,
	"token" uuid NOT NULL,
	"commitment_type" text NOT NULL,
	"contract_term" text NOT NULL,
	"payment_option" text NOT NULL,
	"region" text,
	"instance_type" text,
	"instance_family" text,
	"amount" numeric(30, 10) NOT NULL,
	"planned_upfront" numeric(30, 10) NOT NULL,
	"planned_hourly" numeric(30, 10) NOT NULL,
	"monthly_net_savings" numeric(30, 10) NOT NULL,
	"duration_seconds" integer NOT NULL,
	"fee_rate" numeric(30, 10) DEFAULT '0' NOT NULL,
	"lock_in_days" integer,
	"offering_id" text,
	"quoted_upfront" numeric(30, 10),
	"quoted_hourly" numeric(30, 10),
	"provider_purchase_id" text,
	"provider_state" text,
	"actual_upfront" numeric(30, 10),
	"actual_hourly" numeric(30, 10),
	"currency" text,
	"starts_at" timestamp with time zone,
	"ends_at" timestamp with time zone,
	"commitment_id" uuid,
	"dry_run_summary" text,
	"failure_cause" text,
	"failure_message" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"claimed_by" text,
	"claimed_until" timestamp with time zone,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"submitted_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "purchasing_connections" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"provider" text NOT NULL,
	"config" jsonb NOT NULL,
	"secret_ciphertext" text,
	"secret_key_id" text,
	"secret_fields" text[] DEFAULT '{}'::text[] NOT NULL,
	"dry_run" boolean DEFAULT true NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"last_error" text,
	"last_error_cause" text,
	"last_inventory_at" timestamp with time zone,
	"next_inventory_at" timestamp with time zone DEFAULT now() NOT NULL,
	"claimed_until" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"org_id" uuid NOT NULL,
	"key" text NOT NULL,
	"fingerprint" text NOT NULL,
	"status" text NOT NULL,
	"locked_until" timestamp with time zone NOT NULL,
	"claim_token" text,
	"response_status" integer,
	"response_headers" jsonb,
	"response_body" text,
	"commit_marker" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "idempotency_keys_org_id_key_pk" PRIMARY KEY("org_id","key")
);
--> statement-breakpoint
CREATE TABLE "console_logins" (
	"state_hash" text PRIMARY KEY NOT NULL,
	"code_verifier" text NOT NULL,
	"return_to" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "console_sessions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"secret_hash" text NOT NULL,
	"org_id" uuid NOT NULL,
	"scopes" text[] NOT NULL,
	"sealed_tokens" text NOT NULL,
	"access_expires_at" timestamp with time zone NOT NULL,
	"refreshing_until" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "console_sessions_secret_hash_unique" UNIQUE("secret_hash")
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"seq" bigint GENERATED ALWAYS AS IDENTITY (sequence name "events_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"org_id" uuid NOT NULL,
	"type" text NOT NULL,
	"data_version" integer DEFAULT 1 NOT NULL,
	"occurred_at" timestamp with time zone NOT NULL,
	"data" jsonb NOT NULL,
	"resource_path" text,
	"console_path" text,
	"dedupe_key" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_attempts" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"delivery_id" uuid NOT NULL,
	"endpoint_id" uuid NOT NULL,
	"attempt" integer NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"status_code" integer,
	"latency_ms" integer NOT NULL,
	"response_excerpt" text,
	"error" text,
	"manual" boolean DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid,
	"endpoint_id" uuid NOT NULL,
	"event_id" uuid NOT NULL,
	"event_seq" bigint NOT NULL,
	"event_occurred_at" timestamp with time zone NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_attempt_at" timestamp with time zone,
	"last_status_code" integer,
	"last_latency_ms" integer,
	"last_response_excerpt" text,
	"last_error" text,
	"delivered_at" timestamp with time zone,
	"redeliver_requested_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_endpoints" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid,
	"kind" text DEFAULT 'webhook' NOT NULL,
	"url" text NOT NULL,
	"event_types" text[] NOT NULL,
	"description" text,
	"enabled" boolean DEFAULT true NOT NULL,
	"disabled_reason" text,
	"disabled_at" timestamp with time zone,
	"legacy_key" text,
	"secret_ciphertext" text,
	"secret_key_id" text,
	"previous_secret_ciphertext" text,
	"previous_secret_key_id" text,
	"previous_secret_expires_at" timestamp with time zone,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"consecutive_failures" integer DEFAULT 0 NOT NULL,
	"failing_since" timestamp with time zone,
	"lease_token" uuid,
	"lease_until" timestamp with time zone,
	"created_by" uuid,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "event_scans" (
	"job" text NOT NULL,
	"org_id" uuid NOT NULL,
	"done_for" text,
	"claimed_by" text,
	"claimed_until" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "event_scans_job_org_id_pk" PRIMARY KEY("job","org_id")
);
--> statement-breakpoint
CREATE TABLE "budget_months" (
	"budget_id" uuid NOT NULL,
	"org_id" uuid NOT NULL,
	"month" date NOT NULL,
	"amount" numeric(17, 2) NOT NULL,
	"currency" text NOT NULL,
	"actual" numeric(20, 2) NOT NULL,
	"forecast" numeric(20, 2),
	"last_complete_date" date,
	"computed_at" timestamp with time zone NOT NULL,
	CONSTRAINT "budget_months_budget_id_month_pk" PRIMARY KEY("budget_id","month")
);
--> statement-breakpoint
CREATE TABLE "budget_threshold_crossings" (
	"budget_id" uuid NOT NULL,
	"org_id" uuid NOT NULL,
	"month" date NOT NULL,
	"basis" text NOT NULL,
	"percent" integer NOT NULL,
	"value" numeric(20, 2) NOT NULL,
	"crossed_at" timestamp with time zone NOT NULL,
	"event_id" uuid,
	CONSTRAINT "budget_threshold_crossings_budget_id_month_basis_percent_pk" PRIMARY KEY("budget_id","month","basis","percent")
);
--> statement-breakpoint
CREATE TABLE "budgets" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"name" text NOT NULL,
	"amount" numeric(17, 2) NOT NULL,
	"currency" text NOT NULL,
	"filter" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"thresholds" jsonb NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"next_evaluation_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_evaluated_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "email_notifications" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"org_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"event_id" uuid NOT NULL,
	"to_address" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"lease_token" uuid,
	"lease_until" timestamp with time zone,
	"last_error" text,
	"sent_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "notification_preferences" (
	"org_id" uuid NOT NULL,
	"user_id" uuid NOT NULL,
	"email_event_types" text[] NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "billing_detail_summaries" (
	"org_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"billing_account_id" text NOT NULL,
	"month" date NOT NULL,
	"grain" text NOT NULL,
	"currency" text NOT NULL,
	"account_id" text,
	"account_name" text,
	"resource_id" text,
	"service_category" text,
	"service_name" text,
	"day" date,
	"ondemand_cost" numeric NOT NULL,
	"commitment_cost" numeric NOT NULL,
	"other_cost" numeric NOT NULL,
	"total_cost" numeric NOT NULL,
	"billed_cost" numeric NOT NULL
);
--> statement-breakpoint
CREATE TABLE "billing_summary_periods" (
	"org_id" uuid NOT NULL,
	"provider" text NOT NULL,
	"billing_account_id" text NOT NULL,
	"month" date NOT NULL,
	"line_items" bigint NOT NULL,
	"built_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "billing_summary_periods_org_id_month_provider_billing_account_id_pk" PRIMARY KEY("org_id","month","provider","billing_account_id")
);
--> statement-breakpoint
CREATE TABLE "report_row_sets" (
	"org_id" uuid NOT NULL,
	"report_type" text NOT NULL,
	"provider" text NOT NULL,
	"month" date NOT NULL,
	"inputs" text NOT NULL,
	"row_count" integer NOT NULL,
	"built_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "report_row_sets_org_id_month_provider_report_type_pk" PRIMARY KEY("org_id","month","provider","report_type")
);
--> statement-breakpoint
CREATE TABLE "report_rows" (
	"org_id" uuid NOT NULL,
	"report_type" text NOT NULL,
	"provider" text NOT NULL,
	"month" date NOT NULL,
	"seq" integer NOT NULL,
	"row" jsonb NOT NULL,
	CONSTRAINT "report_rows_org_id_report_type_month_provider_seq_pk" PRIMARY KEY("org_id","report_type","month","provider","seq")
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_created_by_users_id_fk" FOREIGN KEY ("created_by") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "memberships" ADD CONSTRAINT "memberships_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "organizations" ADD CONSTRAINT "organizations_parent_id_organizations_id_fk" FOREIGN KEY ("parent_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_imports" ADD CONSTRAINT "billing_imports_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_periods" ADD CONSTRAINT "billing_periods_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "cloud_accounts" ADD CONSTRAINT "cloud_accounts_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "cloud_accounts" ADD CONSTRAINT "cloud_accounts_child_org_id_organizations_id_fk" FOREIGN KEY ("child_org_id") REFERENCES "public"."organizations"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "commitments" ADD CONSTRAINT "commitments_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "lease_menu_items" ADD CONSTRAINT "lease_menu_items_offer_id_offers_id_fk" FOREIGN KEY ("offer_id") REFERENCES "public"."offers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "lease_menu_items" ADD CONSTRAINT "lease_menu_items_catalog_sku_id_catalog_skus_id_fk" FOREIGN KEY ("catalog_sku_id") REFERENCES "public"."catalog_skus"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sku_price_tiers" ADD CONSTRAINT "sku_price_tiers_catalog_sku_id_catalog_skus_id_fk" FOREIGN KEY ("catalog_sku_id") REFERENCES "public"."catalog_skus"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "cost_estimates" ADD CONSTRAINT "cost_estimates_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "estimate_line_items" ADD CONSTRAINT "estimate_line_items_estimate_id_cost_estimates_id_fk" FOREIGN KEY ("estimate_id") REFERENCES "public"."cost_estimates"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "estimate_line_items" ADD CONSTRAINT "estimate_line_items_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "estimate_line_items" ADD CONSTRAINT "estimate_line_items_catalog_sku_id_catalog_skus_id_fk" FOREIGN KEY ("catalog_sku_id") REFERENCES "public"."catalog_skus"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "estimate_shares" ADD CONSTRAINT "estimate_shares_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "estimate_shares" ADD CONSTRAINT "estimate_shares_estimate_id_cost_estimates_id_fk" FOREIGN KEY ("estimate_id") REFERENCES "public"."cost_estimates"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_codes" ADD CONSTRAINT "oauth_codes_client_id_oauth_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."oauth_clients"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_codes" ADD CONSTRAINT "oauth_codes_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_codes" ADD CONSTRAINT "oauth_codes_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_codes" ADD CONSTRAINT "oauth_codes_session_id_oauth_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."oauth_sessions"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_sessions" ADD CONSTRAINT "oauth_sessions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_tokens" ADD CONSTRAINT "oauth_tokens_client_id_oauth_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."oauth_clients"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_tokens" ADD CONSTRAINT "oauth_tokens_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_tokens" ADD CONSTRAINT "oauth_tokens_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "oauth_tokens" ADD CONSTRAINT "oauth_tokens_session_id_oauth_sessions_id_fk" FOREIGN KEY ("session_id") REFERENCES "public"."oauth_sessions"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "commitment_plan_items" ADD CONSTRAINT "commitment_plan_items_plan_id_commitment_plans_id_fk" FOREIGN KEY ("plan_id") REFERENCES "public"."commitment_plans"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "commitment_plan_items" ADD CONSTRAINT "commitment_plan_items_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "commitment_plan_templates" ADD CONSTRAINT "commitment_plan_templates_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "commitment_plan_templates" ADD CONSTRAINT "commitment_plan_templates_segment_id_segments_id_fk" FOREIGN KEY ("segment_id") REFERENCES "public"."segments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "commitment_plans" ADD CONSTRAINT "commitment_plans_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "commitment_plans" ADD CONSTRAINT "commitment_plans_segment_id_segments_id_fk" FOREIGN KEY ("segment_id") REFERENCES "public"."segments"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "commitment_plans" ADD CONSTRAINT "commitment_plans_template_id_commitment_plan_templates_id_fk" FOREIGN KEY ("template_id") REFERENCES "public"."commitment_plan_templates"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "purchase_runs" ADD CONSTRAINT "purchase_runs_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "purchase_runs" ADD CONSTRAINT "purchase_runs_template_id_commitment_plan_templates_id_fk" FOREIGN KEY ("template_id") REFERENCES "public"."commitment_plan_templates"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "purchases" ADD CONSTRAINT "purchases_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "purchases" ADD CONSTRAINT "purchases_template_id_commitment_plan_templates_id_fk" FOREIGN KEY ("template_id") REFERENCES "public"."commitment_plan_templates"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "purchases" ADD CONSTRAINT "purchases_plan_id_commitment_plans_id_fk" FOREIGN KEY ("plan_id") REFERENCES "public"."commitment_plans"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "segments" ADD CONSTRAINT "segments_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "support_daily_counts" ADD CONSTRAINT "support_daily_counts_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "support_tickets" ADD CONSTRAINT "support_tickets_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "support_tickets" ADD CONSTRAINT "support_tickets_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "org_report_settings" ADD CONSTRAINT "org_report_settings_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "report_snapshots" ADD CONSTRAINT "report_snapshots_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_connection_periods" ADD CONSTRAINT "billing_connection_periods_connection_id_billing_connections_id_fk" FOREIGN KEY ("connection_id") REFERENCES "public"."billing_connections"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_connection_periods" ADD CONSTRAINT "billing_connection_periods_import_id_billing_imports_id_fk" FOREIGN KEY ("import_id") REFERENCES "public"."billing_imports"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_connection_runs" ADD CONSTRAINT "billing_connection_runs_connection_id_billing_connections_id_fk" FOREIGN KEY ("connection_id") REFERENCES "public"."billing_connections"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_connection_runs" ADD CONSTRAINT "billing_connection_runs_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "billing_connections" ADD CONSTRAINT "billing_connections_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "purchase_events" ADD CONSTRAINT "purchase_events_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "purchase_events" ADD CONSTRAINT "purchase_events_purchase_id_purchases_id_fk" FOREIGN KEY ("purchase_id") REFERENCES "public"."purchases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "purchase_items" ADD CONSTRAINT "purchase_items_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "purchase_items" ADD CONSTRAINT "purchase_items_purchase_id_purchases_id_fk" FOREIGN KEY ("purchase_id") REFERENCES "public"."purchases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "purchasing_connections" ADD CONSTRAINT "purchasing_connections_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "console_sessions" ADD CONSTRAINT "console_sessions_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_delivery_id_webhook_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."webhook_deliveries"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_endpoint_id_webhook_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "public"."webhook_endpoints"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_endpoint_id_webhook_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "public"."webhook_endpoints"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_event_id_events_id_fk" FOREIGN KEY ("event_id") REFERENCES "public"."events"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "webhook_endpoints_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "event_scans" ADD CONSTRAINT "event_scans_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "budget_months" ADD CONSTRAINT "budget_months_budget_id_budgets_id_fk" FOREIGN KEY ("budget_id") REFERENCES "public"."budgets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "budget_months" ADD CONSTRAINT "budget_months_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "budget_threshold_crossings" ADD CONSTRAINT "budget_threshold_crossings_budget_id_budgets_id_fk" FOREIGN KEY ("budget_id") REFERENCES "public"."budgets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "budget_threshold_crossings" ADD CONSTRAINT "budget_threshold_crossings_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "budget_threshold_crossings" ADD CONSTRAINT "budget_threshold_crossings_event_id_events_id_fk" FOREIGN KEY ("event_id") REFERENCES "public"."events"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "budgets" ADD CONSTRAINT "budgets_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "email_notifications" ADD CONSTRAINT "email_notifications_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "email_notifications" ADD CONSTRAINT "email_notifications_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "email_notifications" ADD CONSTRAINT "email_notifications_event_id_events_id_fk" FOREIGN KEY ("event_id") REFERENCES "public"."events"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_preferences" ADD CONSTRAINT "notification_preferences_org_id_organizations_id_fk" FOREIGN KEY ("org_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_preferences" ADD CONSTRAINT "notification_preferences_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "api_keys_hash_uq" ON "api_keys" USING btree ("key_hash");--> statement-breakpoint
CREATE INDEX "api_keys_org_idx" ON "api_keys" USING btree ("org_id");--> statement-breakpoint
CREATE UNIQUE INDEX "memberships_org_user_uq" ON "memberships" USING btree ("org_id","user_id");--> statement-breakpoint
CREATE INDEX "organizations_parent_idx" ON "organizations" USING btree ("parent_id");--> statement-breakpoint
CREATE UNIQUE INDEX "users_email_lower_uq" ON "users" USING btree (lower("email"));--> statement-breakpoint
CREATE INDEX "billing_cost_summaries_lookup_idx" ON "billing_cost_summaries" USING btree ("org_id","month","grain","provider","billing_account_id");--> statement-breakpoint
CREATE INDEX "billing_imports_digest_idx" ON "billing_imports" USING btree ("org_id","content_digest") WHERE "billing_imports"."content_digest" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "billing_line_items_org_period_idx" ON "billing_line_items" USING btree ("org_id","billing_period","provider","billing_account_id");--> statement-breakpoint
CREATE INDEX "billing_line_items_unused_idx" ON "billing_line_items" USING btree ("org_id","billing_period","commitment_discount_id") WHERE "billing_line_items"."commitment_discount_status" = 'Unused';--> statement-breakpoint
CREATE INDEX "billing_line_items_commitment_idx" ON "billing_line_items" USING btree ("org_id","commitment_discount_id") WHERE "billing_line_items"."commitment_discount_id" IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "billing_periods_pk" ON "billing_periods" USING btree ("org_id","provider","month");--> statement-breakpoint
CREATE UNIQUE INDEX "cloud_accounts_org_provider_account_uq" ON "cloud_accounts" USING btree ("org_id","provider","account_id");--> statement-breakpoint
CREATE INDEX "commitment_usage_summaries_lookup_idx" ON "commitment_usage_summaries" USING btree ("org_id","month","grain","provider","billing_account_id");--> statement-breakpoint
CREATE UNIQUE INDEX "commitments_org_provider_cid_uq" ON "commitments" USING btree ("org_id","provider","provider_commitment_id");--> statement-breakpoint
CREATE UNIQUE INDEX "catalog_skus_key_uq" ON "catalog_skus" USING btree ("catalog_sku_org_id","provider","provider_sku_id");--> statement-breakpoint
CREATE INDEX "catalog_skus_search_idx" ON "catalog_skus" USING btree ("provider","catalog_sku_org_id","region_code");--> statement-breakpoint
CREATE INDEX "catalog_skus_updated_idx" ON "catalog_skus" USING btree ("updated_at");--> statement-breakpoint
CREATE INDEX "catalog_skus_feed_idx" ON "catalog_skus" USING btree ("feed");--> statement-breakpoint
CREATE UNIQUE INDEX "lease_menu_items_uq" ON "lease_menu_items" USING btree ("offer_id","catalog_sku_id");--> statement-breakpoint
CREATE INDEX "lease_menu_items_sku_idx" ON "lease_menu_items" USING btree ("catalog_sku_id");--> statement-breakpoint
CREATE INDEX "lease_menu_items_updated_idx" ON "lease_menu_items" USING btree ("updated_at");--> statement-breakpoint
CREATE INDEX "lease_menu_items_feed_idx" ON "lease_menu_items" USING btree ("feed");--> statement-breakpoint
CREATE UNIQUE INDEX "offers_key_uq" ON "offers" USING btree ("offer_org_id","provider","offer_key");--> statement-breakpoint
CREATE INDEX "offers_updated_idx" ON "offers" USING btree ("updated_at");--> statement-breakpoint
CREATE INDEX "offers_feed_idx" ON "offers" USING btree ("feed");--> statement-breakpoint
CREATE UNIQUE INDEX "sku_price_tiers_uq" ON "sku_price_tiers" USING btree ("catalog_sku_id","start_quantity");--> statement-breakpoint
CREATE UNIQUE INDEX "cost_estimates_org_draft_live_uq" ON "cost_estimates" USING btree ("org_id","source_draft_id") WHERE deleted_at IS NULL;--> statement-breakpoint
CREATE INDEX "cost_estimates_org_provider_idx" ON "cost_estimates" USING btree ("org_id","provider","updated_at");--> statement-breakpoint
CREATE INDEX "estimate_line_items_estimate_idx" ON "estimate_line_items" USING btree ("estimate_id","seq");--> statement-breakpoint
CREATE INDEX "estimate_shares_estimate_idx" ON "estimate_shares" USING btree ("estimate_id");--> statement-breakpoint
CREATE UNIQUE INDEX "oauth_codes_hash_uq" ON "oauth_codes" USING btree ("code_hash");--> statement-breakpoint
CREATE INDEX "oauth_login_failures_key_idx" ON "oauth_login_failures" USING btree ("email","ip","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "oauth_sessions_hash_uq" ON "oauth_sessions" USING btree ("session_hash");--> statement-breakpoint
CREATE INDEX "oauth_sessions_user_idx" ON "oauth_sessions" USING btree ("user_id");--> statement-breakpoint
CREATE UNIQUE INDEX "oauth_tokens_hash_uq" ON "oauth_tokens" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "oauth_tokens_family_idx" ON "oauth_tokens" USING btree ("family_id");--> statement-breakpoint
CREATE INDEX "oauth_tokens_session_idx" ON "oauth_tokens" USING btree ("session_id");--> statement-breakpoint
CREATE UNIQUE INDEX "oauth_upstream_states_hash_uq" ON "oauth_upstream_states" USING btree ("state_hash");--> statement-breakpoint
CREATE INDEX "plan_items_plan_idx" ON "commitment_plan_items" USING btree ("plan_id");--> statement-breakpoint
CREATE UNIQUE INDEX "templates_segment_system_uq" ON "commitment_plan_templates" USING btree ("segment_id","system_kind") WHERE system_kind IS NOT NULL;--> statement-breakpoint
CREATE INDEX "templates_org_segment_idx" ON "commitment_plan_templates" USING btree ("org_id","segment_id");--> statement-breakpoint
CREATE INDEX "templates_scheduled_idx" ON "commitment_plan_templates" USING btree ("start_date") WHERE schedule IS NOT NULL;--> statement-breakpoint
CREATE INDEX "plans_org_template_idx" ON "commitment_plans" USING btree ("org_id","template_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "purchase_runs_template_date_uq" ON "purchase_runs" USING btree ("template_id","execution_date");--> statement-breakpoint
CREATE INDEX "purchase_runs_pending_idx" ON "purchase_runs" USING btree ("status") WHERE status = 'pending';--> statement-breakpoint
CREATE UNIQUE INDEX "purchases_idempotency_uq" ON "purchases" USING btree ("org_id","idempotency_key");--> statement-breakpoint
CREATE UNIQUE INDEX "purchases_template_date_uq" ON "purchases" USING btree ("template_id","execution_date") WHERE template_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX "purchases_org_status_idx" ON "purchases" USING btree ("org_id","status","created_at");--> statement-breakpoint
CREATE INDEX "purchases_pending_approval_idx" ON "purchases" USING btree ("approval_expires_at") WHERE status = 'pending_approval';--> statement-breakpoint
CREATE UNIQUE INDEX "segments_org_provider_default_uq" ON "segments" USING btree ("org_id","provider") WHERE kind = 'provider_resources';--> statement-breakpoint
CREATE INDEX "segments_org_idx" ON "segments" USING btree ("org_id","provider");--> statement-breakpoint
CREATE UNIQUE INDEX "support_tickets_number_uq" ON "support_tickets" USING btree ("number");--> statement-breakpoint
CREATE INDEX "support_tickets_org_created_idx" ON "support_tickets" USING btree ("org_id","created_at");--> statement-breakpoint
CREATE INDEX "report_snapshots_lookup_idx" ON "report_snapshots" USING btree ("org_id","report_type","month","provider","seq");--> statement-breakpoint
CREATE INDEX "billing_connection_runs_connection_idx" ON "billing_connection_runs" USING btree ("connection_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "billing_connection_runs_one_queued_uq" ON "billing_connection_runs" USING btree ("connection_id") WHERE status = 'queued';--> statement-breakpoint
CREATE UNIQUE INDEX "billing_connections_org_name_uq" ON "billing_connections" USING btree ("org_id",lower("name"));--> statement-breakpoint
CREATE INDEX "billing_connections_due_idx" ON "billing_connections" USING btree ("next_sync_at");--> statement-breakpoint
CREATE INDEX "purchase_events_purchase_idx" ON "purchase_events" USING btree ("purchase_id","seq");--> statement-breakpoint
CREATE UNIQUE INDEX "purchase_items_token_uq" ON "purchase_items" USING btree ("token");--> statement-breakpoint
CREATE UNIQUE INDEX "purchase_items_purchase_position_uq" ON "purchase_items" USING btree ("purchase_id","position");--> statement-breakpoint
CREATE UNIQUE INDEX "purchase_items_provider_purchase_uq" ON "purchase_items" USING btree ("connection_id","provider_purchase_id") WHERE provider_purchase_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX "purchase_items_workable_idx" ON "purchase_items" USING btree ("next_attempt_at") WHERE status IN ('approved', 'submitting');--> statement-breakpoint
CREATE UNIQUE INDEX "purchasing_connections_org_provider_uq" ON "purchasing_connections" USING btree ("org_id","provider");--> statement-breakpoint
CREATE UNIQUE INDEX "purchasing_connections_org_name_uq" ON "purchasing_connections" USING btree ("org_id",lower("name"));--> statement-breakpoint
CREATE INDEX "purchasing_connections_inventory_due_idx" ON "purchasing_connections" USING btree ("next_inventory_at");--> statement-breakpoint
CREATE INDEX "idempotency_keys_created_idx" ON "idempotency_keys" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "console_logins_expires_idx" ON "console_logins" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "console_sessions_expires_idx" ON "console_sessions" USING btree ("expires_at");--> statement-breakpoint
CREATE UNIQUE INDEX "events_org_dedupe_uq" ON "events" USING btree ("org_id","dedupe_key") WHERE dedupe_key IS NOT NULL;--> statement-breakpoint
CREATE INDEX "events_org_time_idx" ON "events" USING btree ("org_id","occurred_at","seq");--> statement-breakpoint
CREATE INDEX "events_org_type_time_idx" ON "events" USING btree ("org_id","type","occurred_at");--> statement-breakpoint
CREATE INDEX "webhook_attempts_endpoint_at_idx" ON "webhook_attempts" USING btree ("endpoint_id","at");--> statement-breakpoint
CREATE INDEX "webhook_attempts_delivery_idx" ON "webhook_attempts" USING btree ("delivery_id","attempt");--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_deliveries_endpoint_event_uq" ON "webhook_deliveries" USING btree ("endpoint_id","event_id");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_pending_idx" ON "webhook_deliveries" USING btree ("endpoint_id","event_occurred_at","event_seq") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "webhook_deliveries_endpoint_time_idx" ON "webhook_deliveries" USING btree ("endpoint_id","created_at");--> statement-breakpoint
CREATE INDEX "webhook_endpoints_org_idx" ON "webhook_endpoints" USING btree ("org_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_endpoints_legacy_uq" ON "webhook_endpoints" USING btree ("legacy_key") WHERE legacy_key IS NOT NULL;--> statement-breakpoint
CREATE INDEX "budget_months_org_idx" ON "budget_months" USING btree ("org_id","month");--> statement-breakpoint
CREATE UNIQUE INDEX "budgets_org_name_uq" ON "budgets" USING btree ("org_id",lower("name"));--> statement-breakpoint
CREATE INDEX "budgets_org_created_idx" ON "budgets" USING btree ("org_id","created_at","id");--> statement-breakpoint
CREATE INDEX "budgets_due_idx" ON "budgets" USING btree ("next_evaluation_at");--> statement-breakpoint
CREATE UNIQUE INDEX "email_notifications_event_user_uq" ON "email_notifications" USING btree ("event_id","user_id");--> statement-breakpoint
CREATE INDEX "email_notifications_due_idx" ON "email_notifications" USING btree ("next_attempt_at") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "email_notifications_org_idx" ON "email_notifications" USING btree ("org_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "notification_preferences_org_user_uq" ON "notification_preferences" USING btree ("org_id","user_id");--> statement-breakpoint
CREATE INDEX "billing_detail_summaries_lookup_idx" ON "billing_detail_summaries" USING btree ("org_id","month","grain","provider","billing_account_id");